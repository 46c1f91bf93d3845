/**
 * The baseline of the MCP section: a bare `node:http` server that reads and JSON.parses the request body and answers a fixed JSON body read from the file named by argv[2], with the
 * same content-type and a content-length, like Belay's /mcp. With argv[3], a request carrying `Mcp-Method` (one of the
 * 2026-07-28 revision) is answered that file's body instead: the bytes each era's answer has, so the era ratio of the
 * bare server is what the revision's own bytes cost. Run as a child process pinned to the server core; prints
 * `listening <port>` once it accepts connections. Concurrency: one event loop; no state besides the bodies.
 */
import * as Fs from "node:fs"
import * as Http from "node:http"

const body = Fs.readFileSync(process.argv[2]!)
const modernBody = process.argv[3] === undefined ? body : Fs.readFileSync(process.argv[3])

const server = Http.createServer({ keepAliveTimeout: 5_000 }, (req, res) => {
  const chunks: Array<Buffer> = []
  req.on("data", (c: Buffer) => chunks.push(c))
  req.on("end", () => {
    try {
      JSON.parse(Buffer.concat(chunks).toString("utf8"))
    } catch {
      res.writeHead(400).end()
      return
    }
    // node:http has built req.headers for every request already (it reads Host): the lookup adds no parse.
    const answer = req.headers["mcp-method"] === undefined ? body : modernBody
    res.writeHead(200, { "content-type": "application/json", "content-length": answer.length })
    res.end(answer)
  })
})

server.listen(0, "127.0.0.1", () => {
  const address = server.address()
  process.stdout.write(`listening ${typeof address === "object" && address ? address.port : 0}\n`)
})
process.on("SIGTERM", () => process.exit(0))
