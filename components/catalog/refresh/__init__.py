"""`gpufleet catalog refresh`: rebuild a cloud's price rows from its public pricing API, keeping the schema.

Parsers (`aws`, `azure`, `gcp`) turn saved API responses into `PriceRecord`s; `merge` folds them into the
existing rows and reports what changed; `fetch` downloads responses when the network allows; `command` is the
CLI handler.
"""
