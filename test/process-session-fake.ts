// A small stand-in for the process session tools (start_process, read_process, write_process,
// stop_process) in the shapes the contract gives them, for testing code written against those
// shapes. It runs the real program (unconfined: tests only) and applies the real command
// policy in start_process's validate, as the real tools do.
import { spawn, type ChildProcess } from "node:child_process";
import { ToolError, checkCommand, type Tool } from "../dist/index.js";

interface Entry {
  child: ChildProcess;
  output: string;
  running: boolean;
  exitCode: number | null;
  signal: string | null;
  waiters: Set<() => void>;
}

export interface FakeSessions {
  tools: Tool[];
  /** Every call made, by tool name, in order. */
  calls: { name: string; input: Record<string, unknown> }[];
  /** Ids of the processes still running. */
  running(): string[];
  /** Removes a process from the table (as the real tools do some time after it ends). */
  forget(id: string): void;
  /** Kills everything still running. */
  close(): void;
}

const obj = { type: "object" as const, additionalProperties: true };

export function fakeSessionTools(cwd: string): FakeSessions {
  const table = new Map<string, Entry>();
  const calls: FakeSessions["calls"] = [];
  let next = 1;

  const state = (id: string, e: Entry, from: number) => ({
    id,
    running: e.running,
    exitCode: e.exitCode,
    signal: e.signal,
    output: e.output.slice(from),
    cursor: Buffer.byteLength(e.output),
    omittedBytes: 0,
    matched: false,
    alerts: [],
    durationMs: 0,
    sandbox: { mode: "off" },
  });

  const wait = (e: Entry, from: number, waitFor: string | undefined, waitMs: number) =>
    new Promise<boolean>((resolve) => {
      const re = waitFor === undefined ? undefined : new RegExp(waitFor);
      const done = (m: boolean) => {
        e.waiters.delete(check);
        clearTimeout(timer);
        resolve(m);
      };
      const check = () => {
        if (re?.test(e.output.slice(from))) done(true);
        else if (!e.running) done(false);
      };
      const timer = setTimeout(() => done(false), waitMs);
      e.waiters.add(check);
      check();
    });

  const get = (id: unknown): Entry => {
    const e = typeof id === "string" ? table.get(id) : undefined;
    if (e === undefined) throw new ToolError("PROCESS_NOT_FOUND", `no process ${String(id)}`, { hint: "call list_processes" });
    return e;
  };

  const byteIndex = (text: string, cursor: number) => Buffer.from(text).subarray(0, cursor).toString().length;

  const tool = (name: string, validate: (i: Record<string, unknown>) => void, execute: (i: Record<string, unknown>) => Promise<unknown>): Tool => ({
    name,
    effect: "process",
    description: `fake ${name}`,
    parameters: obj,
    validate(input: unknown) {
      const i = input as Record<string, unknown>;
      validate(i);
      return i;
    },
    async execute(input: unknown) {
      calls.push({ name, input: input as Record<string, unknown> });
      return execute(input as Record<string, unknown>);
    },
  });

  const tools = [
    tool(
      "start_process",
      (i) => {
        const check = checkCommand(i.argv as string[]);
        if (!check.allowed) throw new ToolError(check.code, check.message, { hint: check.hint, details: check.details });
      },
      async (i) => {
        const argv = i.argv as string[];
        // Node's stdio "pipes" are socket pairs; a `cat` in between gives the program a real
        // pipe as its stdin, as a process started with a piped stdin has.
        const child = spawn("bash", ["-c", 'exec "$0" "$@" < <(exec cat)', ...argv], {
          cwd,
          detached: true,
          stdio: ["pipe", "pipe", "pipe"],
          env: { PATH: process.env.PATH },
        });
        const id = `p${next++}`;
        const e: Entry = { child, output: "", running: true, exitCode: null, signal: null, waiters: new Set() };
        table.set(id, e);
        const add = (d: Buffer) => {
          e.output += d.toString();
          for (const w of [...e.waiters]) w();
        };
        child.stdout!.on("data", add);
        child.stderr!.on("data", add);
        child.stdin!.on("error", () => {});
        // Ended once the program has exited and its stdout is drained (the `cat` goes when its
        // stdin is closed).
        let exited = false;
        let drained = false;
        const settle = () => {
          if (!exited || !drained) return;
          e.running = false;
          for (const w of [...e.waiters]) w();
        };
        child.stdout!.on("end", () => {
          drained = true;
          settle();
        });
        child.on("exit", (code, signal) => {
          exited = true;
          e.exitCode = code;
          e.signal = signal;
          child.stdin!.end();
          settle();
        });
        await wait(e, 0, i.waitFor as string | undefined, (i.waitMs as number | undefined) ?? 1000);
        return state(id, e, 0);
      },
    ),
    tool(
      "read_process",
      () => {},
      async (i) => {
        const e = get(i.id);
        const from = byteIndex(e.output, (i.cursor as number | undefined) ?? 0);
        const matched = await wait(e, from, i.waitFor as string | undefined, (i.waitMs as number | undefined) ?? 1000);
        return { ...state(i.id as string, e, from), matched };
      },
    ),
    tool(
      "write_process",
      (i) => {
        if (typeof i.input !== "string" || Buffer.byteLength(i.input) > 8192) {
          throw new ToolError("TOOL_ARGUMENTS_INVALID", "ARGUMENT_TOO_LARGE", { hint: "at most 8,192 bytes per write" });
        }
      },
      async (i) => {
        const e = get(i.id);
        e.child.stdin!.write(i.input as string);
        return { id: i.id, bytes: Buffer.byteLength(i.input as string) };
      },
    ),
    tool(
      "stop_process",
      () => {},
      async (i) => {
        const e = get(i.id);
        if (e.running) {
          // The whole tree, as the real tools do.
          process.kill(-e.child.pid!, (i.signal as NodeJS.Signals | undefined) ?? "SIGTERM");
          await wait(e, 0, undefined, 5000);
        }
        return state(i.id as string, e, e.output.length);
      },
    ),
  ];

  return {
    tools,
    calls,
    running: () => [...table].filter(([, e]) => e.running).map(([id]) => id),
    forget: (id) => void table.delete(id),
    close: () => {
      for (const e of table.values()) {
        try {
          process.kill(-e.child.pid!, "SIGKILL");
        } catch {
          // already gone
        }
      }
    },
  };
}
