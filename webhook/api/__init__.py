"""The Kueue API: constants, quantities, conversion and CRD schema. Imports nothing below it."""
