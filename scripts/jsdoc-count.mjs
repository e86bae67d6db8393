// Counts the public exports and options of the package that have no JSDoc, through the
// TypeScript compiler API over the published declaration files (index.d.ts and the subpath
// exports' .d.ts), as a user's editor sees them.
//   node scripts/jsdoc-count.mjs            prints what lacks documentation, exits 1 if any
// Used by test/jsdoc.test.ts.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const ts = createRequire(import.meta.url)("typescript");

/** The .d.ts file of every entry point of package.json's `exports`. */
export function entryTypes(root = ROOT) {
  const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
  return Object.entries(pkg.exports)
    .filter(([subpath]) => subpath !== "./package.json")
    .map(([subpath, target]) => ({ subpath, file: join(root, target.types) }));
}

function hasDoc(symbol, checker) {
  if (symbol.getDocumentationComment(checker).length > 0) return true;
  // A JSDoc of tags only (`@deprecated`, `@internal`) counts too.
  return (symbol.getDeclarations() ?? []).some((d) => ts.getJSDocCommentsAndTags(d).length > 0);
}

/**
 * What lacks JSDoc: every symbol an entry point exports (functions, classes, constants, types,
 * interfaces) and every property of an exported interface or type whose name ends in
 * `Options` (a factory's options), nested option objects included, by their dotted path.
 */
export function undocumented(root = ROOT) {
  const entries = entryTypes(root);
  const program = ts.createProgram(
    entries.map((e) => e.file),
    { module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, target: ts.ScriptTarget.ES2022, skipLibCheck: true, noEmit: true, types: ["node"] },
  );
  const checker = program.getTypeChecker();
  const missing = new Set();
  let exportsCount = 0;
  let optionsCount = 0;
  const seenOptions = new Set();
  const visitOptions = (type, path, depth) => {
    if (depth > 3) return;
    for (const prop of checker.getPropertiesOfType(type)) {
      const decl = prop.valueDeclaration ?? prop.declarations?.[0];
      if (!decl || !decl.getSourceFile().fileName.startsWith(root) || decl.getSourceFile().fileName.includes("node_modules")) continue;
      const name = `${path}.${prop.getName()}`;
      // Each declaration once, under the first path that reaches it (an option group shared by
      // several factories is one set of declarations).
      if (seenOptions.has(decl)) continue;
      seenOptions.add(decl);
      optionsCount++;
      if (!hasDoc(prop, checker)) missing.add(`option ${name}`);
      // Nested option groups: an object type declared in the package (createCodingTools' `processes`...).
      const propType = checker.getNonNullableType(checker.getTypeOfSymbolAtLocation(prop, decl));
      if (propType.getCallSignatures().length === 0 && (propType.flags & ts.TypeFlags.Object) !== 0 && !checker.isArrayType(propType)) {
        const target = propType.aliasSymbol ?? propType.getSymbol();
        const tdecl = target?.declarations?.[0];
        if (tdecl && tdecl.getSourceFile().fileName.startsWith(root) && !tdecl.getSourceFile().fileName.includes("node_modules")) {
          visitOptions(propType, name, depth + 1);
        }
      }
    }
  };
  const seen = new Set();
  for (const { subpath, file } of entries) {
    const source = program.getSourceFile(file);
    const moduleSymbol = source && checker.getSymbolAtLocation(source);
    if (!moduleSymbol) throw new Error(`no module for ${file}`);
    for (const exported of checker.getExportsOfModule(moduleSymbol)) {
      const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
      const key = `${subpath}:${exported.getName()}`;
      if (seen.has(symbol)) continue;
      seen.add(symbol);
      exportsCount++;
      if (!hasDoc(symbol, checker) && !hasDoc(exported, checker)) missing.add(`export ${key}`);
      if (/Options$/.test(exported.getName()) && symbol.flags & (ts.SymbolFlags.Interface | ts.SymbolFlags.TypeAlias)) {
        visitOptions(checker.getDeclaredTypeOfSymbol(symbol), exported.getName(), 0);
      }
    }
  }
  return { exports: exportsCount, options: optionsCount, missing: [...missing].sort() };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { exports, options, missing } = undocumented();
  for (const m of missing) console.log(m);
  console.log(`${exports} exports and ${options} options; ${missing.length} without JSDoc`);
  process.exitCode = missing.length === 0 ? 0 : 1;
}
