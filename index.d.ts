// The package's public types: everything `import ... from "workcell"` provides.
export * from "./dist/index.js";
