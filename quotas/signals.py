"""Signals quotas sends so that other apps can react without quotas importing them."""

from django.dispatch import Signal

# Sent inside the transaction of every change to what the scheduler reads: allocations, team policy,
# cluster policy, inventory and priority classes. Keyword argument `what`: a short label.
configuration_changed = Signal()
