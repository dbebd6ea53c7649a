"""Programs shipped inside the stand-in packages (stdlib only: they run on the lab host's
``/usr/bin/python3``). Every line they print starts with ``LAB STAND-IN``."""
