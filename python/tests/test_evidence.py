"""Receipts verified in Python, and the audit of the RC-233 example bundle."""

import copy
import json

import pytest

import writ


@pytest.fixture
def signed_receipts(receiver_factory):
    with receiver_factory() as rx, writ.Sender(to=rx.address) as tx:
        outcome = tx.send(b"receipt me" * 100, id="signed", until="validated")
    return outcome, rx.public_key


def test_a_receipt_verifies_and_a_tampered_one_does_not(signed_receipts):
    outcome, public_key = signed_receipts
    receipt = outcome.receipt("validated")
    assert writ.verify(receipt) == receipt
    assert writ.verify(json.dumps(receipt), key=public_key)["rung"] == "validated"

    tampered = copy.deepcopy(receipt)
    tampered["delivery"]["bytes"] += 1
    with pytest.raises(writ.ValidationError) as invalid:
        writ.verify(tampered)
    assert invalid.value.exit_code == 5

    other_key = "00" * 32
    with pytest.raises(writ.ValidationError):
        writ.verify(receipt, key=other_key)


def test_a_sender_with_an_identity_signs_its_transport_receipt(receiver_factory, tmp_path):
    with receiver_factory() as rx, writ.Sender(to=rx.address, identity=tmp_path / "tx") as tx:
        outcome = tx.send(b"signed by both" * 10, id="both")
    transport = outcome.receipt("transport")
    assert transport["observer"] == "sender"
    assert writ.verify(transport)["signature"]["key_id"] != rx.key_id
    with pytest.raises(writ.ValidationError):
        writ.verify(transport, key=rx.public_key)  # not the receiver's key


def test_the_rc233_example_audits_as_the_cli_reports_it(source_dir):
    evidence = source_dir / "examples/audit/writ-rc-233.evidence.json"
    expected = json.loads((source_dir / "examples/audit/writ-rc-233.audit.json").read_text())
    report = writ.audit(evidence)
    assert report == expected
    assert report["deliveries"][0]["id"] == "RC-233"
    assert writ.audit(evidence.read_text()) == expected
    assert writ.audit(json.loads(evidence.read_text())) == expected


def test_a_malformed_bundle_is_a_usage_error():
    with pytest.raises(writ.UsageError) as malformed:
        writ.audit({"schema": "writ.evidence/1", "deliveries": "not a list"})
    assert malformed.value.exit_code == 2
