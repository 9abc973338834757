"""OpenAPI schema helpers (drf-spectacular); kept apart from portal.api, which DRF's settings import early."""

from drf_spectacular.openapi import AutoSchema


class SingleObjectSchema(AutoSchema):
    """The schema of a viewset whose `list` answers one object (the cluster policy, a usage series)."""

    def _is_list_view(self, serializer=None) -> bool:
        if getattr(self.view, "action", None) == "list" and not getattr(serializer, "many", False):
            return False
        return super()._is_list_view(serializer)


def any_of_instead_of_one_of(result, generator, request, public):
    """drf-spectacular describes a blank-able choice as oneOf [the choices, BlankEnum]; where the choices
    include "" itself (an instance type without accelerators), "" matches both and breaks oneOf. anyOf says
    what the API means. (A postprocessing hook, see SPECTACULAR_SETTINGS.)"""

    def walk(node):
        if isinstance(node, dict):
            if "oneOf" in node:
                node["anyOf"] = node.pop("oneOf")
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(result)
    return result
