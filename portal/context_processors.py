def navigation(request):
    """The navigation entries the signed-in user's role may open (pages check again on the server).

    Kept on the request: django-tables2 renders each TemplateColumn cell with the request's context processors,
    so a table page would otherwise work the navigation out again for every cell."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"nav": []}
    nav = getattr(request, "_portal_nav", None)
    if nav is None:
        from portal.navigation import entries_for

        nav = request._portal_nav = entries_for(user)
    return {"nav": nav}
