// `workcell checkpoints list|create|diff|rewind --root DIR [--store DIR] [ID] [--hash H]`: the
// checkpoints of a workspace from the command line (contract §19). A person runs it: `diff`
// prints the unified diff and the hash, and `rewind ID --hash H` undoes exactly the change set
// that diff showed.
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { createCheckpoints } from "./checkpoints.js";
import { ToolError } from "./errors.js";

export const CHECKPOINTS_USAGE = `  workcell checkpoints list|create|diff|rewind --root DIR [--store DIR] [ID] [--label L] [--hash H]
      list: the checkpoints of DIR, oldest first; create: record DIR now (--label L);
      diff ID: what changed since checkpoint ID, and the hash of that change set;
      rewind ID --hash H: put back everything that diff listed, all or nothing, only while the
      change set still has the hash H. --store DIR: the store (default: the user's cache directory)`;

/** Runs `checkpoints ...`; resolves with the exit code. */
export async function checkpointsCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    strict: true,
    options: { root: { type: "string" }, store: { type: "string" }, label: { type: "string" }, hash: { type: "string" } },
  });
  const [action, id, ...extra] = positionals;
  if (values.root === undefined || values.root === "") throw new TypeError("--root DIR is required: the workspace directory");
  if (extra.length > 0) throw new TypeError(`unexpected argument ${JSON.stringify(extra[0])}`);
  const cps = createCheckpoints(resolve(values.root), values.store === undefined ? {} : { storeDir: resolve(values.store) });
  const out = (s: string) => process.stdout.write(s.endsWith("\n") ? s : `${s}\n`);
  const needId = (): string => {
    if (id === undefined) throw new TypeError(`checkpoints ${action} needs a checkpoint ID (see workcell checkpoints list)`);
    return id;
  };
  try {
    switch (action) {
      case "list":
        for (const c of await cps.list()) {
          out(`${c.id}  ${new Date(c.createdAt).toISOString()}  ${c.files} files  ${c.bytes} bytes${c.label ? `  ${c.label}` : ""}`);
        }
        return 0;
      case "create": {
        const c = await cps.create(values.label === undefined ? {} : { label: values.label });
        out(`${c.id}  ${c.files} files  ${c.bytes} bytes`);
        for (const n of c.notKept) out(`not kept (too large): ${n.path} (${n.bytes} bytes)`);
        for (const d of c.dropped) out(`dropped to stay within the store's bound: ${d}`);
        return 0;
      }
      case "diff": {
        const d = await cps.diff(needId());
        out(d.summary);
        for (const f of d.files) out(`${f.action.padEnd(8)} ${f.path}`);
        if (d.diff) out(d.diff);
        out(`hash ${d.hash}`);
        return 0;
      }
      case "rewind": {
        if (values.hash === undefined) throw new TypeError("checkpoints rewind needs --hash H: the hash workcell checkpoints diff printed");
        const r = await cps.rewind(needId(), { expectedHash: values.hash });
        out(r.summary);
        return 0;
      }
      default:
        throw new TypeError(`checkpoints takes list, create, diff or rewind (got ${JSON.stringify(action ?? "")})`);
    }
  } catch (err) {
    if (err instanceof ToolError) {
      process.stderr.write(`workcell: ${err.code}: ${err.message}${err.hint ? `\n  ${err.hint}` : ""}\n`);
      return 1;
    }
    throw err;
  } finally {
    cps.close();
  }
}
