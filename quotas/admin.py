"""The Django admin: users and roles are edited here; everything that has a history (teams, allocations,
the inventory, priority classes, the cluster policy) is read-only, because its writes must go through
quotas.services (validation, a version with its diff, and an admission run). Change those in the portal's
own pages or API."""

from django.contrib import admin
from django.contrib.auth.admin import UserAdmin

from quotas.models import (
    ClusterPolicy,
    ComputeAllocation,
    ConfigVersion,
    InstanceType,
    NodeGroup,
    PriorityClass,
    Team,
    User,
)

admin.site.register(User, UserAdmin)
UserAdmin.fieldsets = (*UserAdmin.fieldsets, ("Portal", {"fields": ("role",)}))


class ReadOnlyAdmin(admin.ModelAdmin):
    """Shows the rows; adds, changes and deletes happen in the portal, through the services."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class AllocationInline(admin.TabularInline):
    model = ComputeAllocation
    extra = 0
    has_add_permission = ReadOnlyAdmin.has_add_permission
    has_change_permission = ReadOnlyAdmin.has_change_permission
    has_delete_permission = ReadOnlyAdmin.has_delete_permission


@admin.register(Team)
class TeamAdmin(ReadOnlyAdmin):
    list_display = ["name", "namespace", "fair_share_weight", "sharing", "borrow_limit_pct", "preempt_team_tasks"]
    inlines = [AllocationInline]


@admin.register(ConfigVersion)
class ConfigVersionAdmin(ReadOnlyAdmin):
    list_display = ["__str__", "scope", "created_at", "author", "reason"]
    list_filter = ["scope", "team"]


@admin.register(InstanceType)
class InstanceTypeAdmin(ReadOnlyAdmin):
    list_display = ["name", "accelerator_resource", "accelerators", "vcpus", "memory_gib"]


@admin.register(NodeGroup)
class NodeGroupAdmin(ReadOnlyAdmin):
    list_display = ["name", "instance_type", "node_count"]


@admin.register(PriorityClass)
class PriorityClassAdmin(ReadOnlyAdmin):
    list_display = ["name", "weight"]


@admin.register(ClusterPolicy)
class ClusterPolicyAdmin(ReadOnlyAdmin):
    list_display = ["__str__", "updated_at"]


@admin.register(ComputeAllocation)
class ComputeAllocationAdmin(ReadOnlyAdmin):
    list_display = ["team", "instance_type", "instances", "accelerators", "vcpus", "memory_gib"]
