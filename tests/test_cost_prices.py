"""The price snapshot: its schema, its dates, a user's own file, and the refresh from the official formats."""

from __future__ import annotations

import copy
import datetime as dt
import json

import pytest

from conftest import datapath
from iolens.cost import prices as P
from iolens.cost import refresh as R
from iolens.cost.prices import PriceError


def doc():
    return json.loads(P.default_path().read_bytes())


def test_shipped_snapshot_loads_and_covers_what_users_ask_for():
    s = P.load()
    need = ["aws:s3-standard", "aws:s3-standard-ia", "aws:s3-glacier-ir", "aws:s3-glacier-deep-archive",
            "aws:ebs-gp2", "aws:ebs-gp3", "aws:ebs-io1", "aws:ebs-io2", "aws:ebs-st1", "aws:ebs-sc1",
            "aws:ebs-standard", "aws:efs-standard", "aws:fsx-lustre-scratch2", "aws:ec2-instance-nvme",
            "gcp:gcs-standard", "gcp:gcs-archive", "gcp:pd-balanced", "gcp:pd-ssd", "azure:blob-hot",
            "azure:blob-archive", "azure:disk-premium-ssd", "azure:disk-standard-hdd"]
    assert not [n for n in need if n not in s.options]
    for i in ("aws:m5.xlarge", "aws:m5d.xlarge", "aws:m6id.8xlarge", "aws:c5.2xlarge"):
        assert s.instance(i).price.price > 0
    assert s.instance("aws:m5d.xlarge").local_nvme_gb == 150
    gp3 = s.option("aws:ebs-gp3")
    assert (gp3.included_iops, gp3.included_throughput_mibps) == (3000, 125)
    ia = s.option("aws:s3-standard-ia")
    assert (ia.min_duration_days, ia.min_object_kb) == (30, 128) and "retrieval" in ia.prices
    # honest dates: transcribed, never a made-up retrieval date; every price names its source
    assert s.transcribed and s.retrieved is None and s.as_of
    for o in [*s.options.values()]:
        for p in o.prices.values():
            assert p.source and p.transcribed and p.retrieved is None, (o.id, p.dimension)


def test_age_warning_after_six_months():
    s = P.load()
    when = P.parse_date(s.as_of)
    assert s.age_warning(today=when + dt.timedelta(days=30)) is None
    w = s.age_warning(today=when + dt.timedelta(days=400))
    assert "13 months ago" in w and "transcribed" in w and "--refresh-prices" in w and "--prices" in w
    assert "in the price list shipped with iolens date from" in w and "prices.json" not in w  # no install path


def test_a_users_own_price_file_is_named_by_its_path_in_warnings(tmp_path):
    f = tmp_path / "mine.json"
    f.write_bytes(P.default_path().read_bytes())
    s = P.load(f)
    w = s.age_warning(today=P.parse_date(s.as_of) + dt.timedelta(days=400))
    assert f"in {f} date from" in w


def test_users_own_prices_in_the_same_format(tmp_path):
    d = doc()
    d["options"]["aws:ebs-gp3"]["prices"]["storage"]["price"] = 0.05  # negotiated
    f = tmp_path / "mine.json"
    f.write_text(json.dumps(d))
    assert P.load(f).option("aws:ebs-gp3").prices["storage"].price == 0.05


def _broken(mutate):
    d = doc()
    mutate(d)
    return json.dumps(d).encode()


@pytest.mark.parametrize("data, message", [
    (b"not json", "is not JSON"),
    (b"[]", "is not an iolens price file"),
    (json.dumps({"tag": "iolens-compare", "schema_version": [1, 0]}).encode(), "is not an iolens price file"),
    (_broken(lambda d: d.update(schema_version=[2, 0])), "price schema 2.0; this iolens reads 1.x: upgrade"),
    (_broken(lambda d: d.pop("schema_version")), "has no schema_version"),
    (_broken(lambda d: d.update(currency="EUR")), "prices in USD only"),
    (_broken(lambda d: d["options"]["aws:ebs-gp3"]["prices"]["storage"].update(unit="GB-hour")),
     "has unit 'GB-hour'; a storage price is per 'GB-month'"),
    (_broken(lambda d: d["options"]["aws:ebs-gp3"]["prices"]["storage"].update(price="cheap")),
     "price is 'cheap', not a number"),
    (_broken(lambda d: d["options"]["aws:ebs-gp3"]["prices"].pop("storage")), "has no storage price"),
    (_broken(lambda d: d["options"]["aws:ebs-gp3"]["prices"].update(speed={"unit": "x", "price": 1})),
     "unknown price dimension 'speed'"),
    (_broken(lambda d: d["options"]["aws:ec2-instance-nvme"].update(instance="aws:m9.huge")),
     "names instance 'aws:m9.huge', which has no price"),
])
def test_wrong_price_files_are_one_line(data, message):
    with pytest.raises(PriceError) as err:
        P.parse(data, "f.json")
    assert message in str(err.value) and "\n" not in str(err.value)
    assert str(err.value).startswith("f.json")


def test_minor_version_newer_is_read():
    assert P.parse(_broken(lambda d: d.update(schema_version=[1, 7])), "f.json").options


def load_fixtures():
    aws = [(f.name, json.loads(f.read_text())) for f in sorted(datapath("cost").glob("aws-*.json"))]
    az = [(f.name, json.loads(f.read_text())) for f in sorted(datapath("cost").glob("azure-*.json"))]
    return aws, az


def test_refresh_from_recorded_aws_and_azure_formats():
    base = doc()
    # start from deliberately wrong prices: the refresh must replace them with the sources'
    for o in base["options"].values():
        for p in o["prices"].values():
            if "price" in p:
                p["price"] = 9.99
    base["instances"]["aws:m5.xlarge"]["prices"]["compute"]["price"] = 9.99
    aws, az = load_fixtures()
    res = R.refresh(base, aws_offers=aws, azure_pages=az, today=dt.date(2024, 6, 10))
    s = P.parse(json.dumps(res.doc).encode(), "refreshed")
    o = s.options
    assert o["aws:ebs-gp2"].prices["storage"].price == 0.10
    assert o["aws:ebs-io1"].prices["storage"].price == 0.125  # usagetype EBS:VolumeUsage.piops
    assert o["aws:ebs-gp3"].prices["throughput"].price == pytest.approx(0.04)  # GiBps-mo converted to MiBps
    assert o["aws:ebs-io2"].prices["iops"].tiers[1]["price"] == 0.0455
    assert o["aws:ebs-standard"].prices["io_requests"].price == pytest.approx(0.05)  # per IO -> per million
    assert o["aws:s3-standard"].prices["storage"].price == 0.023  # the first 50 TB tier
    assert o["aws:s3-standard"].prices["write_requests"].price == pytest.approx(0.005)  # per request -> per 1000
    assert o["aws:s3-standard-ia"].prices["retrieval"].price == 0.01
    assert o["aws:efs-standard"].prices["data_written"].price == 0.06
    assert s.instances["aws:m5.xlarge"].price.price == 0.192  # Linux, shared, used; not Windows, not Ohio
    assert s.instances["aws:m5d.xlarge"].price.price == 0.226
    assert o["azure:blob-hot"].prices["storage"].price == 0.018  # eastus, first volume tier
    assert o["azure:blob-hot"].prices["read_requests"].price == pytest.approx(0.0004)  # per 10K -> per 1000
    assert o["azure:blob-archive"].prices["retrieval"].price == 0.02
    assert s.instances["azure:D4s_v5"].price.price == 0.192  # not Windows, Spot or a reservation
    tiers = o["azure:disk-premium-ssd"].prices["disk"].tiers
    assert [t["size_gb"] for t in tiers][:3] == [32, 64, 128] and tiers[2]["price"] == 19.71
    assert o["azure:disk-standard-hdd"].prices["io_requests"].price == pytest.approx(0.05)
    gp2 = o["aws:ebs-gp2"].prices["storage"]
    assert gp2.retrieved == "2024-06-10" and gp2.as_of == "2024-05-01" and not gp2.transcribed
    assert "SKU" in gp2.source and "EBS:VolumeUsage.gp2" in gp2.source
    # what the fixtures lack stays as it was, still transcribed, and is listed
    assert o["aws:fsx-lustre-scratch2"].prices["storage"].transcribed
    assert any("fsx-lustre-scratch2" in m for m in res.missing)
    assert o["gcp:gcs-standard"].prices["storage"].price == 9.99  # GCP: no keyless source
    assert s.transcribed and s.retrieved is None  # not every price was fetched
    assert res.doc["refreshed"]["date"] == "2024-06-10"


def test_refresh_refuses_files_in_the_wrong_format_and_unknown_units():
    with pytest.raises(PriceError, match="is not an AWS Price List offer file"):
        R.refresh(doc(), aws_offers=[("x.json", {"Items": []})])
    with pytest.raises(PriceError, match="is not an Azure Retail Prices API page"):
        R.refresh(doc(), azure_pages=[("y.json", {"products": {}})])
    aws, _az = load_fixtures()
    ec2 = copy.deepcopy(dict(aws)["aws-AmazonEC2-us-east-1.json"])
    for term in ec2["terms"]["OnDemand"].values():
        for t in term.values():
            for d in t["priceDimensions"].values():
                if d["unit"] == "GB-Mo":
                    d["unit"] = "GB-Hrs"
    with pytest.raises(PriceError, match="priced per 'GB-Hrs'"):
        R.refresh(doc(), aws_offers=[("ec2.json", ec2)])
