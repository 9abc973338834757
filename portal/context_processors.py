def navigation(request):
    """The navigation entries the signed-in user's role may open (pages check again on the server)."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"nav": []}
    from portal.navigation import entries_for

    return {"nav": entries_for(user)}
