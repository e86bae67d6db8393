import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: "forks",
    // Most files spend their time waiting on processes and deadlines, not on the CPU: at least
    // two at once, where Vitest's default (the cores minus one) runs one at a time on two cores
    // (the suite alone: about 300 s against 600). `npm test` builds and runs the Rust tests
    // meanwhile (the ci-test profile, without LTO): in a fresh-clone CI run on two cores, Vitest
    // took 8.5 minutes, cargo 9, and the whole run 13.6 with the install and the build.
    maxWorkers: Math.max(2, availableParallelism() - 1),
  },
});
