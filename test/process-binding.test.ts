// The process tools' binding passes the core's own option and result types through: counts
// stay JS numbers whatever their size, and an option key the core does not know is refused.
import { describe, expect, test } from "vitest";
import { ToolError, createNodeProcessTool, createRunCommandTool } from "../dist/index.js";
import { openWorkspace } from "../dist/native.js";
import { ctx, tempWorkspace } from "./helpers.js";

const FOUR_GIB = 4 * 1024 ** 3; // above u32::MAX: napi makes such a u64 a BigInt

describe("process results from the core's types", () => {
  test("a count above u32::MAX is a number in a result and in a timeout's details, never a BigInt", async () => {
    const { root } = await tempWorkspace();
    const limits = { fileBytes: FOUR_GIB + 1024 };
    const node = createNodeProcessTool(root, { limits });
    const out = await node.execute(node.validate({ source: "console.log(1)" }), ctx());
    expect(typeof out.sandbox.limits.fileBytes.max).toBe("number");
    expect(out.sandbox.limits.fileBytes.max).toBe(FOUR_GIB + 1024);

    const slow = createNodeProcessTool(root, { limits, timeoutMs: 300 });
    const err = await slow.execute(slow.validate({ source: "for (;;) {}" }), ctx()).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ToolError);
    const details = (err as ToolError).details as { sandbox: { limits: { fileBytes: { max: unknown } } } };
    expect(details.sandbox.limits.fileBytes.max).toBe(FOUR_GIB + 1024);
    expect(() => JSON.stringify(details)).not.toThrow();

    const cmd = createRunCommandTool(root, { limits });
    const r = await cmd.execute(cmd.validate({ argv: ["true"] }), ctx());
    expect(r.sandbox.limits.fileBytes.max).toBe(FOUR_GIB + 1024);
    expect(r.exitCode).toBe(0);
    expect("note" in r).toBe(false);
  });

  test("an option key the core does not know is refused, not ignored", async () => {
    const { root } = await tempWorkspace();
    const ws = openWorkspace(root);
    const sandbox = { sandbox: "off", network: false, readPaths: [], writePaths: [] };
    const options = { path: "/usr/bin:/bin", env: [], timeoutMs: 1000, maxTimeoutMs: 2000, scratchDir: "/tmp", reaper: "auto", sandbox };
    expect(() => ws.checkRunCommand(["true"], undefined, undefined, options)).not.toThrow();
    expect(() => ws.checkRunCommand(["true"], undefined, undefined, { ...options, timeoutMS: 5 })).toThrow(/unknown field `timeoutMS`/);
    expect(() => ws.checkRunCommand(["true"], undefined, undefined, { ...options, sandbox: { ...sandbox, netwrok: true } })).toThrow(/unknown field `netwrok`/);
    expect(() => ws.checkRunCommand(["true"], undefined, undefined, { ...options, timeoutMs: 1.5 })).toThrow(/non-negative integer/);
    expect(() => ws.checkRunCommand(["true"], undefined, undefined, { ...options, reaper: "sigchld" })).toThrow(/unknown reaper/);
    expect(() => ws.checkRunTests("node", [], undefined, { ...options, nodePath: process.execPath, extra: 1 })).toThrow(/unknown field `extra`/);
  });
});
