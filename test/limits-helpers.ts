// The `limits` part of a sandbox report with the default caps, for tests that compare whole
// reports: `mode` "off" enforces nothing; "auto" enforces each cap by some mechanism
// (test/sandbox-limits.test.ts checks which); "any" where a layer is simulated away.
import { expect } from "vitest";
import { sandboxLimitDefaults } from "../dist/index.js";

export function defaultLimitsReport(mode: "auto" | "off" | "any" = "auto") {
  const d = sandboxLimitDefaults();
  const by = mode === "off" ? "none" : mode === "any" ? expect.any(String) : expect.stringMatching(/^(rlimit|cgroup-v1|cgroup-v2)$/);
  return {
    processes: { max: d.processes, by },
    memoryBytes: { max: d.memoryBytes, by },
    fileBytes: { max: d.fileBytes, by: mode === "off" ? "none" : "rlimit" },
  };
}
