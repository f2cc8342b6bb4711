"""Monitoring for gpufleet nodes: GPU alert rules (alerts.yml) and Prometheus scrape jobs per cloud."""
