"""The traffic panel: what runs, the form that starts or changes it, failures in words."""
