import pytest


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    """The fixtures create four users per test; PBKDF2 would make each test take seconds."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
