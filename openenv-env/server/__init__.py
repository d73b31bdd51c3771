"""Starts `dealgym serve`, the server that speaks OpenEnv's protocol."""
