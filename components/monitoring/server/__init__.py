"""The monitoring server's own user data: Prometheus, Alertmanager and Grafana config, and its boot scripts."""
