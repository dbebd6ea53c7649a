"""The simulated rack: real Linux test hosts (systemd-nspawn on a private bridge), emulated
iDRACs, and a MAAS API simulator. The lab runs the same code paths as a real site; only the
endpoints differ.
"""
