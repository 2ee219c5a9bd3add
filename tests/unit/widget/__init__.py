"""A throwaway integration (example.com/v1 Widget) added through the registry alone, for
`tests/unit/test_integrations.py`: its webhook module and its adapter module."""
