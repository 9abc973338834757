from django.apps import AppConfig


class WhatIfConfig(AppConfig):
    name = "scheduling.whatif"
    label = "whatif"
    verbose_name = "Decide with evidence: fair share explained, what-if replays, quota requests, advice"
