// The HTTP fuzz suite's server, in a process of its own (spawned with --expose-gc and an IPC channel), so that a
// crash shows as an exit and its memory is its own: the real `startServer` over a temporary data directory, its
// proxy pointed at a minimal upstream. Prints {url, key, otherKey, projectId, otherProjectId} once listening; answers
// 'memory' with process.memoryUsage() after a full GC, and 'close' by closing and exiting.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

import { startServer } from '../../src/server/app.js';

const [dataDir] = process.argv.slice(2);
// The proxy relays whatever JSON object the client sent; this upstream reads it all and answers one small reply, so
// that the proxy's own handling is what the suite exercises.
const upstream = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json', 'openai-organization': 'org-operator' });
    res.end('{"id":"x","object":"chat.completion","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1}}');
  });
});
await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
const upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
const server = await startServer({
  dataDir,
  port: 0,
  pool: { workers: 1, engineThreads: 1 },
  proxyModels: ['provider-a:gpt-fake'],
  providers: {
    'provider-a': { url: `${upstreamUrl}/a`, key: 'sk-operator-a' },
    'provider-b': { url: `${upstreamUrl}/b`, key: 'sk-operator-b' },
    'provider-c': { url: `${upstreamUrl}/c`, key: 'sk-operator-c' },
  },
  proxyOptions: { upstreamTimeoutMs: 2_000, pingIntervalMs: 100 },
  // Thousands of requests a minute, many with bad keys, from one address: limits this high let them all reach the
  // routes under test (the limits have their own suite).
  rateLimit: { failedAuthPerWindow: 1_000_000 },
});
const { service } = server;
await service.createOrganization('acme');
await service.setProxyAccess('acme', true);
await service.setOrgLimits('acme', { requestsPerMinute: 1_000_000 });
await service.createOrganization('globex');
await service.setOrgLimits('globex', { requestsPerMinute: 1_000_000 });
const key = (await service.createApiKey('acme')).key;
const otherKey = (await service.createApiKey('globex')).key;
const projectId = (await service.createProject('acme', 'chat')).id;
const otherProjectId = (await service.createProject('globex', 'chat')).id;
process.stdout.write(`${JSON.stringify({ url: server.url, key, otherKey, projectId, otherProjectId })}\n`);

process.on('message', async (message) => {
  if (message === 'memory') {
    for (let i = 0; i < 3; i++) {
      globalThis.gc!();
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    process.send!(process.memoryUsage());
  } else if (message === 'close') {
    await server.close();
    upstream.close();
    process.exit(0);
  }
});
