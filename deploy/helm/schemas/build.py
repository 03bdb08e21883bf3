#!/usr/bin/env python3
"""Lays out the JSON schemas kubeconform checks the chart's manifests
against, from packages only: no download from GitHub at check time.

    python3 deploy/helm/schemas/build.py OUT WHEEL VERSION... [--crd FILE]...

- Kubernetes: the schemas inside the kubernetes-validate wheel from PyPI
  (its kubernetes-json-schema/vX.Y.Z-local-strict folders), one folder per
  VERSION. They point at their shared definitions with
  "$ref": "/api/_definitions.json#..." (a path kubernetes-validate resolves
  itself); each is rewritten to the file's own _definitions.json as a
  file:// URL, which is all kubeconform needs.
- CRDs (the ServiceMonitor): each version's openAPIV3Schema from the CRD's
  YAML (shipped in the prometheus-operator Go module), made strict as
  kubeconform's -strict expects: an object that lists its properties and
  does not keep unknown fields gets additionalProperties: false.

OUT gets vX.Y.Z-standalone-strict/KIND-GROUP-VERSION.json for both, the
layout of kubeconform's -schema-location template
OUT/{{.NormalizedKubernetesVersion}}-standalone{{.StrictSuffix}}/{{.ResourceKind}}{{.KindSuffix}}.json.
The same inputs give the same files.
"""
import json
import os
import sys
import zipfile

import yaml


def kubernetes(out, wheel, versions):
    with zipfile.ZipFile(wheel) as z:
        for version in versions:
            prefix = "kubernetes_validate/kubernetes-json-schema/%s-local-strict/" % version
            names = [n for n in z.namelist() if n.startswith(prefix) and n.endswith(".json")]
            if not names:
                sys.exit("build.py: the wheel has no schemas for %s" % version)
            folder = os.path.abspath(os.path.join(out, "%s-standalone-strict" % version))
            os.makedirs(folder, exist_ok=True)
            ref = '"file://%s/_definitions.json#' % folder
            for name in sorted(names):
                text = z.read(name).decode("utf-8").replace('"/api/_definitions.json#', ref)
                with open(os.path.join(folder, os.path.basename(name)), "w") as f:
                    f.write(text)


def strict(schema):
    if isinstance(schema, dict):
        if (schema.get("type") == "object" and "properties" in schema
                and "additionalProperties" not in schema
                and not schema.get("x-kubernetes-preserve-unknown-fields")):
            schema["additionalProperties"] = False
        for value in schema.values():
            strict(value)
    elif isinstance(schema, list):
        for value in schema:
            strict(value)
    return schema


def crds(out, versions, files):
    for path in files:
        with open(path) as f:
            crd = yaml.safe_load(f)
        kind = crd["spec"]["names"]["kind"].lower()
        group = crd["spec"]["group"].split(".")[0]
        for v in crd["spec"]["versions"]:
            schema = strict(v["schema"]["openAPIV3Schema"])
            for version in versions:
                folder = os.path.join(out, "%s-standalone-strict" % version)
                os.makedirs(folder, exist_ok=True)
                with open(os.path.join(folder, "%s-%s-%s.json" % (kind, group, v["name"])), "w") as f:
                    json.dump(schema, f, indent=1, sort_keys=True)


def main(argv):
    args, files = [], []
    while argv:
        a = argv.pop(0)
        if a == "--crd":
            files.append(argv.pop(0))
        else:
            args.append(a)
    if len(args) < 3:
        sys.exit(__doc__)
    out, wheel, versions = args[0], args[1], args[2:]
    kubernetes(out, wheel, versions)
    crds(out, versions, files)


if __name__ == "__main__":
    main(sys.argv[1:])
