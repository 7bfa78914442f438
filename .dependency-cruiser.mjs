/**
 * The layer rule (README "Layout"): a layer imports only layers below it, and another folder is
 * entered only through its index.ts.
 *
 *   cli → http → payment → store → devnet → facilitator → snapshot → config.ts, config-error.ts,
 *   networks.ts, routes.ts, version.ts
 *
 * config.ts is the one entry of config/ (one table of variables per concern), which sits as low.
 */
const LAYERS = ["cli", "http", "payment", "store", "devnet", "facilitator", "snapshot"];
const ROOT_FILES = "^src/((config|config-error|networks|routes|version)\\.ts$|config/)";

const upward = LAYERS.map((layer, rank) => ({
  name: `layer-${layer}`,
  comment: `src/${layer}/ may import only the layers below it`,
  severity: "error",
  from: { path: `^src/${layer}/` },
  to: { path: rank === 0 ? "^$" : `^src/(${LAYERS.slice(0, rank).join("|")})/` },
})).filter((rule) => rule.to.path !== "^$");

export default {
  forbidden: [
    ...upward,
    {
      name: "root-files-import-no-layer",
      comment: "config.ts, config/ and their siblings sit below every layer",
      severity: "error",
      from: { path: ROOT_FILES },
      to: { path: "^src/[^/]+/", pathNot: "^src/config/" },
    },
    {
      name: "enter-through-index",
      comment: "another folder is entered only through its index.ts",
      severity: "error",
      from: { path: "^src/([^/]+)/" },
      to: { path: "^src/[^/]+/", pathNot: ["^src/$1/", "^src/[^/]+/index\\.ts$"] },
    },
    {
      name: "config-through-config-ts",
      comment: "config/ is entered only through config.ts",
      severity: "error",
      from: { path: "^src/", pathNot: ["^src/config(\\.ts$|/)"] },
      to: { path: "^src/config/" },
    },
    {
      name: "doors-above-the-paid-call",
      comment:
        "the paid call (payment/paid-call.ts) and what it stands on never import a door of it " +
        "(payment/doors/: HTTP, MCP, the page's form) nor the gate that puts them together",
      severity: "error",
      from: {
        path: "^src/payment/",
        pathNot: ["^src/payment/doors/", "^src/payment/(gate|index)\\.ts$"],
      },
      to: { path: ["^src/payment/doors/", "^src/payment/gate\\.ts$"] },
    },
    {
      name: "no-circular",
      severity: "error",
      from: { path: "^src/" },
      to: { circular: true },
    },
    {
      name: "src-not-to-tests",
      comment: "production code never imports tests, fixtures or benchmarks",
      severity: "error",
      from: { path: "^src/" },
      to: { path: "^(test|bench)/" },
    },
    {
      name: "src-not-to-dev-deps",
      comment: "what src/ imports must be a dependency, installed in production too",
      severity: "error",
      from: { path: "^src/", pathNot: "\\.test\\.ts$" },
      to: { dependencyTypes: ["npm-dev"] },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default"],
    },
  },
};
