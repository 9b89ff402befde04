// Validates Kubernetes objects against the API's schemas, as the npm
// packages kubernetes-models (the core API groups) and
// @kubernetes-models/prometheus-operator (ServiceMonitor and the like)
// carry them: types, required fields, enumerations and formats such as
// resource quantities. Kubernetes' schemas do not refuse unknown fields.
//
// Usage: node kube-validate.mjs FILE.json, a JSON array of the objects
// (tests/integration/contrib-kubernetes.sh converts the YAML); the
// packages come from $NODE_MODULES. Prints one line per object; exits 1
// when one is invalid.
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";

const require = createRequire(process.env.NODE_MODULES + "/");
const packages = { "monitoring.coreos.com": "@kubernetes-models/prometheus-operator/" };
let failed = false;
for (const object of JSON.parse(readFileSync(process.argv[2], "utf8"))) {
  const group = object.apiVersion.includes("/") ? object.apiVersion.split("/")[0] : "";
  const name = `${object.apiVersion} ${object.kind} ${object.metadata?.name}`;
  const Kind = require((packages[group] ?? "kubernetes-models/") + object.apiVersion)[object.kind];
  if (!Kind) {
    console.log(`not ok: ${name}: no schema for this kind`);
    failed = true;
    continue;
  }
  try {
    new Kind(object).validate();
    console.log(`ok: ${name}`);
  } catch (e) {
    console.log(`not ok: ${name}: ${e.message}`);
    failed = true;
  }
}
process.exit(failed ? 1 : 0);
