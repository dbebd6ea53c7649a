"""Simulator state -> MAAS 3.5 JSON shapes (maas-api.md §2.3; ``api/examples/*.json``)."""

from __future__ import annotations

from typing import Any

from racksmith.lab.maassim.state import S, SimMachine, Store

API = "/MAAS/api/2.0/"
_TEST_STATUS = {True: (2, "Passed"), False: (-1, "None")}


def _partition_json(m: SimMachine, dev: dict[str, Any], index: int, part) -> dict[str, Any]:
    fstype, mount, size = part
    pid = dev["id"] * 100 + index
    return {
        "id": pid,
        "uuid": f"{m.system_id}-{dev['id']}-{index}",
        "size": size,
        "bootable": mount == "/boot/efi",
        "type": "partition",
        "path": f"/dev/disk/by-dname/{dev['name']}-part{index}",
        "filesystem": {
            "fstype": fstype,
            "mount_point": mount or None,
            "label": None,
            "mount_options": None,
            "uuid": None,
        }
        if fstype
        else None,
        "used_for": f"{fstype} formatted filesystem mounted at {mount}" if mount else "LVM volume",
        "system_id": m.system_id,
        "device_id": dev["id"],
        "tags": [],
        "resource_uri": f"{API}nodes/{m.system_id}/blockdevices/{dev['id']}/partition/{pid}",
    }


def blockdevice_json(m: SimMachine, dev: dict[str, Any]) -> dict[str, Any]:
    parts = [_partition_json(m, dev, i, p) for i, p in enumerate(dev.get("partitions") or (), 1)]
    used = sum(p["size"] for p in parts)
    return {
        "id": dev["id"],
        "name": dev["name"],
        "path": f"/dev/disk/by-dname/{dev['name']}",
        "id_path": dev["id_path"],
        "model": dev["model"],
        "serial": dev["serial"],
        "size": dev["size"],
        "block_size": 512 if dev["bus"] == "ata" else 4096,
        "type": "physical",
        "tags": list(dev.get("tags") or ()),
        "filesystem": None,
        "partitions": parts,
        "partition_table_type": "GPT" if parts else None,
        "used_for": f"GPT partitioned with {len(parts)} partitions" if parts else "Unused",
        "used_size": used,
        "available_size": dev["size"] - used,
        "storage_pool": None,
        "numa_node": 0,
        "firmware_version": "2.1.8" if dev["bus"] == "ata" else "2.2.0",
        "uuid": None,
        "system_id": m.system_id,
        "resource_uri": f"{API}nodes/{m.system_id}/blockdevices/{dev['id']}/",
    }


def _interfaces(store: Store, m: SimMachine) -> list[dict[str, Any]]:
    addressed = m.state in (S.DEPLOYING, S.DEPLOYED) and m.ip
    out = []
    for i, (mac, iid) in enumerate(zip(m.macs, m.interface_ids, strict=False)):
        links = []
        if i == 0 and addressed:
            cidr = ".".join(m.ip.split(".")[:3]) + ".0/24"
            links.append(
                {
                    "id": iid,
                    "mode": "auto",
                    "ip_address": m.ip,
                    "subnet": {"id": 1, "name": cidr, "cidr": cidr, "vlan": {"vid": 0}},
                }
            )
        out.append(
            {
                "id": iid,
                "name": f"eth{i}",
                "type": "physical",
                "mac_address": mac,
                "enabled": True,
                "link_connected": True,
                "link_speed": 100000,
                "interface_speed": 100000,
                "effective_mtu": 1500,
                "params": "",
                "tags": [],
                "vlan": {
                    "id": 5001,
                    "vid": 0,
                    "name": "untagged",
                    "fabric": "fabric-0",
                    "dhcp_on": True,
                    "primary_rack": "4y3h7n",
                },
                "links": links,
                "children": [],
                "parents": [],
                "discovered": [],
                "system_id": m.system_id,
                "numa_node": 0,
                "product": None,
                "vendor": None,
                "firmware_version": None,
                "sriov_max_vf": 0,
                "resource_uri": f"{API}nodes/{m.system_id}/interfaces/{iid}/",
            }
        )
    return out


def machine_json(store: Store, m: SimMachine) -> dict[str, Any]:
    status = m.state
    devices = [blockdevice_json(m, d) for d in sorted(m.block_devices, key=lambda d: d["id"])]
    boot = next((d for d in devices if d["id"] == m.boot_disk_id), None)
    interfaces = _interfaces(store, m)
    commissioned = m.commissioned
    test_status, test_name = _TEST_STATUS[commissioned]
    hw = store.rack.server(m.lab_server) if (store.rack and m.lab_server) else None
    from racksmith.lab.maassim import hardware

    prof = hardware.profile(m.model)
    ip_addresses = [m.ip] if m.ip and status in (S.DEPLOYING, S.DEPLOYED) else []
    return {
        "system_id": m.system_id,
        "hostname": m.hostname,
        "fqdn": f"{m.hostname}.{m.domain}",
        "description": m.description,
        "hardware_uuid": hw.uuid if hw else None,
        "domain": {
            "id": 0,
            "name": m.domain,
            "authoritative": True,
            "ttl": None,
            "resource_record_count": 0,
            "is_default": True,
        },
        "zone": {"id": 1, "name": m.zone, "description": store.zones.get(m.zone, "")},
        "pool": {"id": 0, "name": m.pool, "description": store.pools.get(m.pool, "")},
        "owner": m.owner,
        "owner_data": {},
        "locked": m.locked,
        "status": int(status),
        "status_name": status.display,
        "status_message": store.status_message(m),
        "status_action": "",
        "error_description": m.error_description,
        "architecture": m.architecture,
        "cpu_count": prof.cpu_count if commissioned else 0,
        "cpu_speed": prof.cpu_speed if commissioned else 0,
        "memory": prof.memory if commissioned else 0,
        "storage": sum(d["size"] for d in devices) / 1e6,
        "osystem": m.osystem,
        "distro_series": m.distro_series,
        "hwe_kernel": m.hwe_kernel or None,
        "min_hwe_kernel": m.min_hwe_kernel,
        "ephemeral_deploy": False,
        "netboot": status is not S.DEPLOYED,
        "disable_ipv4": False,
        "power_type": m.power_type,
        "power_state": m.power_state,
        "boot_interface": interfaces[0] if interfaces else None,
        "interface_set": interfaces,
        "ip_addresses": ip_addresses,
        "default_gateways": {
            "ipv4": {"gateway_ip": None, "link_id": None},
            "ipv6": {"gateway_ip": None, "link_id": None},
        },
        "boot_disk": boot,
        "blockdevice_set": devices,
        "physicalblockdevice_set": devices,
        "virtualblockdevice_set": [],
        "volume_groups": [],
        "raids": [],
        "cache_sets": [],
        "bcaches": [],
        "special_filesystems": [],
        "swap_size": None,
        "commissioning_status": test_status,
        "commissioning_status_name": test_name,
        "testing_status": test_status,
        "testing_status_name": test_name,
        **{
            f"{k}_test_status": test_status
            for k in ("cpu", "memory", "network", "storage", "other", "interface")
        },
        **{
            f"{k}_test_status_name": test_name
            for k in ("cpu", "memory", "network", "storage", "other", "interface")
        },
        "tag_names": list(m.tags),
        "node_type": 0,
        "node_type_name": "Machine",
        "numanode_set": [
            {"index": 0, "memory": prof.memory // 2, "cores": list(range(prof.cpu_count // 2))},
            {
                "index": 1,
                "memory": prof.memory // 2,
                "cores": list(range(prof.cpu_count // 2, prof.cpu_count)),
            },
        ]
        if commissioned
        else [],
        "hardware_info": {
            "system_vendor": "Dell Inc." if commissioned else "Unknown",
            "system_product": prof.product if commissioned else "Unknown",
            "system_serial": (hw.service_tag if hw else m.system_id.upper())
            if commissioned
            else "Unknown",
            "system_version": "Unknown",
            "system_sku": "Unknown",
            "system_family": "Unknown",
            "cpu_model": "Intel(R) Xeon(R) Platinum 8480+" if commissioned else "Unknown",
            "mainboard_vendor": "Dell Inc.",
            "mainboard_product": "0WKGK3",
            "mainboard_serial": hw.serial if hw else "Unknown",
            "mainboard_version": "A00",
            "mainboard_firmware_vendor": "Dell Inc.",
            "mainboard_firmware_version": "2.3.5",
            "mainboard_firmware_date": "06/04/2025",
            "chassis_vendor": "Dell Inc.",
            "chassis_type": "Rack Mount Chassis",
        },
        "bios_boot_method": "uefi",
        "pod": None,
        "current_commissioning_result_id": 1 if "current-commissioning" in m.logs else None,
        "current_installation_result_id": 2 if "current-installation" in m.logs else None,
        "current_testing_result_id": None,
        "workload_annotations": {},
        "enable_hw_sync": False,
        "last_sync": None,
        "sync_interval": None,
        "next_sync": None,
        "address_ttl": None,
        "virtualmachine_id": None,
        "resource_uri": f"{API}machines/{m.system_id}/",
    }


def event_json(event: dict[str, Any]) -> dict[str, Any]:
    return {
        k: event[k]
        for k in ("username", "node", "hostname", "id", "level", "created", "type", "description")
    }


def tag_json(tag: dict[str, str]) -> dict[str, Any]:
    return {**tag, "resource_uri": f"{API}tags/{tag['name']}/"}
