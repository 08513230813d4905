"""Router settings for tests that check what one upstream call gives the caller (error mapping,
timeouts): no retries and no cooldowns, so every request makes exactly one call."""

NO_RETRIES = {"num_retries": 0, "disable_cooldowns": True}
