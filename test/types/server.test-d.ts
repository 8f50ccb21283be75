// The public types of `svc-classify/server`, pinned (see library.test-d.ts): the plugins' options,
// the model object and the bodies of the HTTP contract, inferred from their zod schemas.
import { expectTypeOf } from 'expect-type';
import type { FastifyPluginAsync } from 'fastify';
import { describe, it } from 'vitest';
import type { z } from 'zod';

import type { DirectoryHub, Hub } from '../../src/index.js';
import * as server from '../../src/server/index.js';
import {
  type ErrorBody,
  type ModelObject,
  modelSchema,
  type PredictResponse,
  type RunningServer,
  type ServerOptions,
  startServer,
  type SvcRoutesOptions,
  svcRoutes,
  SvcService,
} from '../../src/server/index.js';

describe('svc-classify/server types', () => {
  it('svcRoutes is a Fastify plugin taking the service', () => {
    expectTypeOf(svcRoutes).toEqualTypeOf<FastifyPluginAsync<SvcRoutesOptions>>();
    expectTypeOf<SvcRoutesOptions['service']>().toEqualTypeOf<SvcService>();
    expectTypeOf(startServer).parameter(0).toEqualTypeOf<ServerOptions | undefined>();
    expectTypeOf(startServer).returns.resolves.toEqualTypeOf<RunningServer>();
  });

  it('the server and the service take base model folders by name', () => {
    expectTypeOf<server.BaseModelDirs>().toEqualTypeOf<Readonly<Record<string, string>>>();
    expectTypeOf<ServerOptions['baseModels']>().toEqualTypeOf<server.BaseModelDirs | undefined>();
    expectTypeOf<server.SvcServiceOptions['baseModels']>().toEqualTypeOf<server.BaseModelDirs | undefined>();
  });

  it('the library runtime bounds its loaded classifiers by bytes (and optionally by count)', () => {
    expectTypeOf<server.LibraryRuntimeOptions['maxLoadedModelBytes']>().toEqualTypeOf<number | undefined>();
    expectTypeOf<server.LibraryRuntimeOptions['maxCachedModels']>().toEqualTypeOf<number | undefined>();
  });

  it('PostgresHub is a Hub, and the runtime takes a folder or either hub', () => {
    expectTypeOf<server.PostgresHub>().toMatchTypeOf<Hub>();
    expectTypeOf(server.PostgresHub.open).parameter(1).toEqualTypeOf<server.PostgresHubOptions>();
    expectTypeOf<server.LibraryRuntimeOptions['hub']>().toEqualTypeOf<string | DirectoryHub | server.PostgresHub>();
  });

  it('the model object is the schema inferred, with the fields users read', () => {
    expectTypeOf<ModelObject>().toEqualTypeOf<z.infer<typeof modelSchema>>();
    expectTypeOf<ModelObject['object']>().toEqualTypeOf<'model'>();
    expectTypeOf<ModelObject['status']>().toEqualTypeOf<'training' | 'trained' | 'failed'>();
    expectTypeOf<ModelObject['context_window']>().toEqualTypeOf<number>();
    expectTypeOf<ModelObject['error']>().toEqualTypeOf<string | undefined>();
  });

  it('error bodies and predict responses keep their shapes', () => {
    expectTypeOf<ErrorBody['error']>().toEqualTypeOf<{ message: string; type: string; param: string | null; code: string | null }>();
    expectTypeOf<Extract<PredictResponse, { label_text: string }>['predictions'][number]['label']>().toEqualTypeOf<boolean>();
  });

  it('exports the HTTP schemas by name and no internal helper', () => {
    expectTypeOf(server).toHaveProperty('trainRequestSchema');
    expectTypeOf(server).toHaveProperty('predictRequestSchema');
    expectTypeOf(server).not.toHaveProperty('modelParamsSchema');
    expectTypeOf(server).not.toHaveProperty('toModelObject');
    expectTypeOf(server).not.toHaveProperty('databaseUrlFromEnv');
  });
});
