// Runs the network allowlist's scenarios (test/network-scenarios.mjs) in this process, as
// whatever user started it, and prints one JSON line. test/network.test.ts starts it as `nobody`.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as lib from "../dist/index.js";
import { scenarios } from "./network-scenarios.mjs";

const root = mkdtempSync(join(tmpdir(), "workcell-net-"));
try {
  const out = await scenarios(lib, root);
  console.log(JSON.stringify({ uid: process.getuid(), ...out }));
} finally {
  rmSync(root, { recursive: true, force: true });
}
