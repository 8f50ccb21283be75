// svc-classify's /v2 and hub routes inside your own Fastify app. Needs `fastify` installed next to
// svc-classify. Starts again on the same data directory as often as you like: only the first start
// creates the organization and prints its API key. PORT (default 8080) and DATA_DIR (default
// ./svc-data) are this example's own settings.
import Fastify from 'fastify';
import { hubRoutes, LibraryRuntime, proxyRoutes, SqliteStore, SvcService, svcRoutes } from 'svc-classify/server';

const dataDir = process.env.DATA_DIR ?? './svc-data';
const service = new SvcService({
  store: SqliteStore.open(dataDir),
  runtime: new LibraryRuntime({ hub: `${dataDir}/hub` }),
});
await service.start(); // resumes training jobs a previous process left unfinished

// Operator tasks from code, once: a second createOrganization('acme') would be a 409 conflict.
if ((await service.store.getOrganization('acme')) === null) {
  await service.createOrganization('acme');
  const { key } = await service.createApiKey('acme'); // only its SHA-256 is stored
  console.log(`created organization acme; its API key, shown only this once: ${key}`);
}

const app = Fastify();
app.get('/health', async () => ({ ok: true })); // your own routes stay as they are
// The provider proxy is optional; it takes its upstream URLs and keys from SVC_PROVIDER_A_URL / _KEY (B, C likewise).
await app.register(svcRoutes, { prefix: '/v2', service, proxy: proxyRoutes });
await app.register(hubRoutes, { prefix: '/hub', service });
app.addHook('onClose', () => service.close());
const url = await app.listen({ port: Number(process.env.PORT ?? 8080), host: '127.0.0.1' });
console.log(`listening on ${url}`);

for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => void app.close());
