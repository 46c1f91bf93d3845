import { configDefaults, defineConfig } from "vitest/config"

// Two projects: `unit` (pure code, actors against the scripted fake IRC server,
// services and HTTP against the embedded database or TEST_DATABASE_URL) and
// `system` (real ngircd, real Chromium, the MCP conformance suite).
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: "unit",
          include: ["test/**/*.test.ts"],
          exclude: [...configDefaults.exclude, "test/system/**", "test/conformance/**"],
          testTimeout: 30_000,
          hookTimeout: 60_000
        }
      },
      {
        test: {
          name: "system",
          include: ["test/system/**/*.test.ts"],
          testTimeout: 120_000,
          hookTimeout: 120_000,
          // one ngircd / one Chromium at a time: 2 cores, fixed system resources
          poolOptions: { forks: { singleFork: true } }
        }
      }
    ]
  }
})
