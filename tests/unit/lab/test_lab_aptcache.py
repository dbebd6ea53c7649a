"""The apt cache's private configuration: bridge-bound, the controller's own Debian mirror."""

from pathlib import Path

from racksmith.lab import aptcache


def test_config_binds_to_the_bridge_only_and_refuses_unmanaged_urls(tmp_path):
    files = aptcache.render_config(
        root=tmp_path, bind="192.168.250.1", port=3142,
        mirror="http://mirror.example/debian", security="http://sec.example/debian-security/",
    )  # fmt: skip
    conf = files["acng.conf"]
    assert "BindAddress: 192.168.250.1\n" in conf
    assert "Port: 3142\n" in conf
    assert "ForceManaged: 1\n" in conf
    assert f"CacheDir: {tmp_path}/cache\n" in conf
    assert files["backends_debian"] == "http://mirror.example/debian/\n"
    assert (
        "Remap-secdeb: sec.example/debian-security /debian-security ; sec.example/debian-security\n"
        in conf
    )


def test_config_keeps_state_inside_the_lab(tmp_path):
    conf = aptcache.render_config(
        root=tmp_path, bind="10.0.0.1", port=3143, mirror="http://m/debian", security="http://m/s"
    )["acng.conf"]
    for key in ("CacheDir", "LogDir", "SocketPath"):
        line = next(x for x in conf.splitlines() if x.startswith(key + ":"))
        assert Path(line.split(": ", 1)[1]).is_relative_to(tmp_path)


def test_proxy_url():
    assert aptcache.proxy_url("192.168.250.1", 3142) == "http://192.168.250.1:3142"
