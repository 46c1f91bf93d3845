// The layers of docs/architecture.md ("The layers"), as rules `npm run check` enforces
// (dependency-cruiser, src/ only; type-only imports count). Each rule is one line of that picture.
const layer = (name) => `^src/${name}/`
const servicesBelow = (folders) => `^src/services/(${folders.join("|")})/`

// services/ folders, bottom to top (src/services/README.md): a folder imports only those before it.
const SERVICE_FOLDERS = ["upkeep", "egress", "storage", "crypto", "identity", "oauth", "networks", "history", "events", "preferences", "push", "uploads", "previews", "memberdata", "nodes"]

const serviceFolderRules = SERVICE_FOLDERS.map((folder, i) => ({
  name: `services-${folder}-imports-below`,
  comment: `services/${folder} imports only the folders below it (src/services/README.md)`,
  severity: "error",
  from: { path: `^src/services/${folder}/` },
  to: { path: "^src/services/[^/]+/", pathNot: servicesBelow(SERVICE_FOLDERS.slice(0, i + 1)) }
}))

module.exports = {
  forbidden: [
    {
      name: "no-circular",
      comment: "No import circle, type-only ones included (docs/architecture.md \"The layers\")",
      severity: "error",
      from: { path: "^src/" },
      to: { circular: true }
    },
    {
      name: "vocabulary-imports-nothing",
      comment: "schema, irc and net are the vocabulary: they import no other layer",
      severity: "error",
      from: { path: "^src/(schema|irc|net)/" },
      to: { path: "^src/", pathNot: "^src/(schema|irc|net)/" }
    },
    {
      name: "vocabulary-folders-apart",
      comment: "schema, irc and net do not import each other",
      severity: "error",
      from: { path: "^src/(schema|irc|net)/" },
      to: { path: "^src/(schema|irc|net)/", pathNot: ["^src/$1/"] }
    },
    {
      name: "services-below-callers",
      comment: "services never import the layers that call them",
      severity: "error",
      from: { path: layer("services") },
      to: { path: "^src/(actors|http|listener|cluster|admin|cli)/" }
    },
    {
      name: "actors-below-doors",
      comment: "actors never import the doors (http, listener, admin, cli) or the cluster built on them",
      severity: "error",
      from: { path: layer("actors") },
      to: { path: "^src/(http|listener|cluster|admin|cli)/" }
    },
    {
      name: "actor-internals-private",
      comment: "outside src/actors, network actors are reached through the port (NetworkApi) and the runner (LocalActors)",
      severity: "error",
      from: { path: "^src/", pathNot: layer("actors") },
      to: { path: "^src/actors/network/" }
    },
    {
      name: "doors-through-the-port",
      comment: "http, listener and admin reach actors only through the port src/actors/NetworkApi.ts",
      severity: "error",
      from: { path: "^src/(http|listener|admin)/" },
      to: { path: layer("actors"), pathNot: "^src/actors/NetworkApi\\.ts$" }
    },
    {
      name: "doors-apart",
      comment: "the doors do not reach sideways: what two share lives below both",
      severity: "error",
      from: { path: "^src/(http|listener|admin|cli)/" },
      to: { path: "^src/(http|listener|admin|cli)/", pathNot: ["^src/$1/"] }
    },
    {
      name: "cluster-only-from-main",
      comment: "nothing imports src/cluster but src/main.ts",
      severity: "error",
      from: { path: "^src/", pathNot: ["^src/main\\.ts$", layer("cluster")] },
      to: { path: layer("cluster") }
    },
    {
      name: "nothing-imports-main",
      comment: "src/main.ts assembles the graph; only the command that starts it (belay serve) imports it",
      severity: "error",
      from: { path: "^src/", pathNot: "^src/cli/main\\.ts$" },
      to: { path: "^src/main\\.ts$" }
    },
    {
      name: "config-imports-nothing",
      comment: "services/AppConfig.ts reads the environment and imports no other service",
      severity: "error",
      from: { path: "^src/services/AppConfig\\.ts$" },
      to: { path: "^src/", pathNot: ["^src/services/AppConfig\\.ts$", "^src/(schema|irc|net)/"] }
    },
    {
      name: "upkeep-imports-no-service",
      comment: "services/upkeep sits under every other service, AppConfig included",
      severity: "error",
      from: { path: "^src/services/upkeep/" },
      to: { path: "^src/services/", pathNot: "^src/services/upkeep/" }
    },
    ...serviceFolderRules
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    includeOnly: "^src/",
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: { exportsFields: ["exports"], conditionNames: ["import", "require", "node", "default"], extensions: [".ts", ".js"] }
  }
}
