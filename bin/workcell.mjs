#!/usr/bin/env node
// The `workcell` command: see `workcell --help`. The code is in ts/cli.ts (built to dist/).
import { main } from "../dist/cli.js";

process.exitCode = await main(process.argv.slice(2));
