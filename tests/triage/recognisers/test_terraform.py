# ruff: noqa: E501  (real log lines are kept whole)
"""Terraform: the `╷ │ Error:` box and its `on file line N` location."""

from __future__ import annotations

from landbot.triage.recognisers import terraform as rec

from .conftest import failures, found, kinds, pasted


def test_error_box_and_where() -> None:
    # Terraform output pasted in a stored public file (the code index's file id
    # 7567463997; it names no repository).
    text = "\n".join(
        [
            "plan: error: failed to plan Terraform configuration in Azure/Azure-LB",
            "╷",
            '│ Error: Reference to "each" in context without for_each',
            "│ ",  # (its trailing space is the log's)
            '│   on main.tf line 110, in resource "azurerm_network_interface_backend_address_pool_association" "lb_backend_association":',
            "│  110:   backend_address_pool_id = azurerm_lb_backend_address_pool.internal_lb_bepool[each.key].id",
        ]
    )
    got = found(rec.ECOSYSTEM, pasted(text))
    assert got == {
        3: ("terraform-error", "main.tf:110"),
        5: ("terraform-location", "main.tf:110"),
    }
    assert failures(rec.ECOSYSTEM, pasted(text)) == {3: "main.tf:110"}


def test_a_box_terraform_did_not_draw_is_not_marked() -> None:
    # Control: PHPUnit's `│ Error:` under a failed test, pasted in a stored public file
    # (file id 221539257): no `╷` opens it.
    text = """ ✘ Error bootstapping suite (most likely in Issue3107\\Issue3107Test::setUpBeforeClass)
   │
   │ Error: Call to undefined function %Sdoes_not_exist()"""
    assert kinds(rec.ECOSYSTEM, pasted(text)) == {}
