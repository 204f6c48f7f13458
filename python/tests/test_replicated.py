"""writ.send_replicated against real `writ serve --domain` receivers (static receivers=,
no etcd): K copies counted from distinct domains, the certificate writ.verify accepts, the
evidence bundle writ.audit supports, and a shortfall raised as RetentionError."""

import json
import os
import subprocess

import pytest

import writ

WRIT_BINARY = os.environ.get("WRIT_BINARY", "")

pytestmark = pytest.mark.skipif(
    not os.access(WRIT_BINARY, os.X_OK),
    reason="WRIT_BINARY (the writ program, set by ctest's python.pytest) is not executable")


@pytest.fixture
def serve(tmp_path):
    """Starts `writ serve --data DIR --domain D` on loopback tcp; stops them after."""
    started = []

    def start(domain):
        data = tmp_path / ("data-%d" % len(started))
        with open(tmp_path / ("serve-%d.err" % len(started)), "w") as err:
            proc = subprocess.Popen(
                [WRIT_BINARY, "serve", "--listen", "127.0.0.1:0", "--provider", "tcp", "--data",
                 str(data), "--domain", domain, "--window-pool", "16MiB", "--window-size",
                 "4MiB"], stdout=subprocess.PIPE, stderr=err, text=True)
        started.append(proc)
        for line in proc.stdout:  # "writ: listening on HOST:PORT (provider tcp)"
            if line.startswith("writ: listening on "):
                return line.split()[3]
        pytest.fail("writ serve --domain %s never said it was listening" % domain)

    yield start
    for proc in started:
        proc.terminate()
        proc.wait(timeout=30)


def test_k_copies_from_distinct_domains_with_certificate_and_evidence(serve, tmp_path):
    receivers = [serve("rack-a"), serve("rack-b"), serve("rack-c")]
    payload = tmp_path / "ckpt.bin"
    payload.write_bytes(os.urandom(3 << 20))

    sent = writ.Sender.send_replicated(payload, k=2, receivers=receivers, id="ckpt-1")

    assert len(sent.counted) == 2
    assert sent.certificate["retention"] == "replicated:2"
    domains = {m["failure_domain"] for m in sent.certificate["members"]}
    assert len(domains) == 2
    for replica in sent.counted:
        assert replica.outcome.reached["retention"] == "power-loss"
        assert replica.address in receivers
    # Each member verifies on its own key; the certificate's delivery is the file's.
    for member in sent.certificate["members"]:
        writ.verify(member, key=member["signature"]["public_key"])
    assert sent.certificate["delivery"]["bytes"] == 3 << 20

    report = writ.audit(sent.evidence)  # revision 2, from the bundle's own statements
    assert report["deliveries"][0]["retention"] == "replicated:2"
    assert all(c["verdict"] == "supported" for c in report["claims"]), report["claims"]
    bundle = tmp_path / "ckpt.evidence.json"
    bundle.write_text(json.dumps(sent.evidence))
    audited = json.loads(subprocess.run([WRIT_BINARY, "audit", str(bundle), "--json"],
                                        check=True, capture_output=True, text=True).stdout)
    kinds = [c["kind"] for c in sent.evidence["claims"]]
    copies = audited["claims"][kinds.index("copies")]
    assert copies["verdict"] == "supported", copies
    assert len(set(copies["signed_by"])) == 2


def test_a_buffer_is_sent_and_a_shortfall_raises_retention_error(serve):
    receivers = [serve("rack-a"), serve("rack-a")]
    with pytest.raises(writ.RetentionError) as raised:
        writ.send_replicated(b"\x07" * 65536, k=2, receivers=receivers, id="one-domain")
    outcome = raised.value.outcome
    assert outcome is not None and outcome.certificate is None
    assert len(outcome.counted) == 1
    refused = [r for r in outcome.replicas if not r.counted]
    assert refused and "already holds a copy" in refused[0].why_not
    assert "replicated:2 not reached" in raised.value.message


def test_bad_arguments_raise_usage_error():
    with pytest.raises(writ.UsageError):
        writ.send_replicated(b"x", k=2, receivers=["127.0.0.1:1"])  # no id for a buffer
    with pytest.raises(writ.UsageError):
        writ.send_replicated("/nonexistent", k=2)  # neither cluster nor receivers
