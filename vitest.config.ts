import { configDefaults, defineConfig } from "vitest/config"

// Three projects: `unit` (pure code, actors against the scripted fake IRC server,
// services and HTTP against the embedded PostgreSQL or TEST_DATABASE_URL), `system`
// (real ngircd, real Chromium, the MCP conformance suite), `fuzz` (tens of thousands
// of generated hostile requests against a `belay serve` child; `npm run test:fuzz`) and `faults` (a real
// `belay serve` through ngircd restarts, a PostgreSQL restart mid-flood, SIGTERM and
// SIGKILL while ingesting, no database at start; test/faults). Each run starts
// one database server (or uses TEST_DATABASE_URL's) with a migrated template
// database, from which every test file or layer gets a fresh copy.
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: "unit",
          include: ["test/**/*.test.ts"],
          exclude: [...configDefaults.exclude, "test/system/**", "test/conformance/**", "test/fuzz/**", "test/faults/**"],
          globalSetup: ["test/support/globalSetup.ts"],
          testTimeout: 30_000,
          hookTimeout: 60_000
        }
      },
      {
        test: {
          name: "system",
          include: ["test/system/**/*.test.ts"],
          globalSetup: ["test/support/globalSetup.ts"],
          testTimeout: 120_000,
          hookTimeout: 120_000,
          // one ngircd / one Chromium at a time: 2 cores, fixed system resources
          poolOptions: { forks: { singleFork: true } }
        }
      },
      {
        test: {
          name: "fuzz",
          include: ["test/fuzz/**/*.test.ts"],
          globalSetup: ["test/support/globalSetup.ts"],
          // One storm of ~40,000 requests, bounded to run in well under 6 minutes on 2 cores.
          testTimeout: 360_000,
          hookTimeout: 180_000
        }
      },
      {
        test: {
          name: "faults",
          include: ["test/faults/**/*.test.ts"],
          globalSetup: ["test/support/globalSetup.ts"],
          testTimeout: 300_000,
          hookTimeout: 120_000
          // `npm run test:faults` runs two files at once (--maxWorkers=2): the ngircd restarts spend most of their
          // time waiting (each period stays up for STABLE_CONNECTION), so the other cases run beside them.
        }
      }
    ]
  }
})
