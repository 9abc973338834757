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


class AllocationInline(admin.TabularInline):
    model = ComputeAllocation
    extra = 0


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ["name", "namespace", "fair_share_weight", "sharing", "borrow_limit_pct", "preempt_team_tasks"]
    filter_horizontal = ["members"]
    inlines = [AllocationInline]


@admin.register(ConfigVersion)
class ConfigVersionAdmin(admin.ModelAdmin):
    list_display = ["__str__", "created_at", "author", "reason"]
    list_filter = ["scope", "team"]
    readonly_fields = [f.name for f in ConfigVersion._meta.fields]


admin.site.register([InstanceType, NodeGroup, PriorityClass, ClusterPolicy])
