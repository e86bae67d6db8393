// workcell's blocking work runs on threads of its own, never on libuv's pool (four threads by
// default), which the host's own fs, dns.lookup, zlib and crypto need.
import { lookup } from "node:dns/promises";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { hashFile } from "../dist/index.js";
import { tempWorkspace } from "./helpers.js";

describe("host threads", () => {
  test("host_fs_and_dns_complete_while_slow_workcell_calls_run", async () => {
    const { root } = await tempWorkspace();
    // 48 MiB: each hash takes a while (SHA-256 of the whole file).
    await writeFile(join(root, "big.bin"), Buffer.alloc(48 << 20, 0x61));
    await writeFile(join(root, "small.txt"), "hello\n");
    const order: string[] = [];
    const slow = Array.from({ length: 8 }, (_, i) =>
      hashFile(root, "big.bin").then(() => {
        order.push(`hash${i}`);
      }),
    );
    const fsDone = readFile(join(root, "small.txt"), "utf8").then((t) => {
      order.push("fs");
      return t;
    });
    const dnsDone = lookup("localhost").then(() => {
      order.push("dns");
    });
    expect(await fsDone).toBe("hello\n");
    await dnsDone;
    await Promise.all(slow);
    // The host's calls finished before the first of the slow ones.
    expect(order.slice(0, 2).sort()).toEqual(["dns", "fs"]);
  }, 120_000);
});
