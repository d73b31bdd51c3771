"""dealgym as an OpenEnv environment: `server.app.main` starts the `dealgym serve` binary."""
