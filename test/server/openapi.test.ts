// /v2/openapi.json with the real proxy mounted, checked by an OpenAPI 3 validator from npm: every
// $ref resolves inside the document and every path parameter is declared.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import SwaggerParser from '@apidevtools/swagger-parser';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';

import { WordCountRuntime } from '../../fixtures/word-count-runtime.js';
import { proxyRoutes } from '../../src/server/proxy-routes.js';
import { svcRoutes } from '../../src/server/routes.js';
import { SvcService } from '../../src/service/service.js';
import { SqliteStore } from '../../src/store/sqlite.js';

function refsOf(value: unknown, out: string[] = []): string[] {
  if (Array.isArray(value)) value.forEach((item) => refsOf(item, out));
  else if (value !== null && typeof value === 'object') {
    for (const [key, inner] of Object.entries(value)) {
      if (key === '$ref' && typeof inner === 'string') out.push(inner);
      else refsOf(inner, out);
    }
  }
  return out;
}

describe('GET /v2/openapi.json', () => {
  it('is a valid OpenAPI 3 document whose named schemas live in components.schemas', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-openapi-'));
    const service = new SvcService({ store: SqliteStore.open(dir), runtime: new WordCountRuntime(join(dir, 'hub')) });
    const app = Fastify();
    try {
      await app.register(svcRoutes, { prefix: '/v2', service, proxy: proxyRoutes, proxyOptions: { env: {} } });
      const response = await app.inject({ method: 'GET', url: '/v2/openapi.json' });
      expect(response.statusCode).toBe(200);
      const doc = response.json() as { components: { schemas: Record<string, unknown> }; paths: Record<string, unknown> };
      const named = [
        'BinaryClassifyRequest',
        'BinaryTrainRequest',
        'Error',
        'LabelRule',
        'LogSource',
        'LogTrainRequest',
        'Model',
        'ModelEvaluation',
        'ModelVersion',
        'MultiClassClassifyRequest',
        'MultiClassTrainRequest',
        'MultiLabelClassifyRequest',
        'MultiLabelTrainRequest',
        'PromoteRequest',
        'ProxyModel',
        'Shadow',
        'Teacher',
        'TeacherCost',
        'TeacherSelection',
        'TeacherTrainRequest',
        'TrainingData',
      ];
      expect([...new Set(refsOf(doc))].sort()).toEqual(named.map((id) => `#/components/schemas/${id}`));
      expect(Object.keys(doc.components.schemas).sort()).toEqual(named);
      // The train body is one of the three task types' requests, told apart by task_type,
      const train = (doc.paths['/v2/train'] as { post: { requestBody: { content: Record<string, { schema: unknown }> } } }).post;
      // Or texts for a teacher to label, or logged calls of a project.
      expect(train.requestBody.content['application/json'].schema).toEqual({
        anyOf: [
          {
            oneOf: [
              { $ref: '#/components/schemas/BinaryTrainRequest' },
              { $ref: '#/components/schemas/MultiClassTrainRequest' },
              { $ref: '#/components/schemas/MultiLabelTrainRequest' },
            ],
          },
          { $ref: '#/components/schemas/TeacherTrainRequest' },
          { $ref: '#/components/schemas/LogTrainRequest' },
        ],
      });
      const multiClass = doc.components.schemas.MultiClassTrainRequest as {
        properties: Record<string, { enum?: unknown[] }>;
        required: string[];
      };
      expect(multiClass.properties.task_type.enum).toEqual(['multi-class-classification']);
      expect(multiClass.properties.class_weight.enum).toEqual(['balanced']);
      expect(multiClass.required.sort()).toEqual(['examples', 'model', 'task_type']);
      expect(Object.keys(doc.paths)).toContain('/v2/{project_id}/chat/completions');
      // The classify body: the same three task types, with their own bounds (examples may be [] for zero-shot).
      const classify = (doc.paths['/v2/classify'] as { post: { requestBody: { content: Record<string, { schema: unknown }> } } }).post;
      expect(classify.requestBody.content['application/json'].schema).toEqual({
        oneOf: [
          { $ref: '#/components/schemas/BinaryClassifyRequest' },
          { $ref: '#/components/schemas/MultiClassClassifyRequest' },
          { $ref: '#/components/schemas/MultiLabelClassifyRequest' },
        ],
      });
      const classifyClass = doc.components.schemas.MultiClassClassifyRequest as {
        properties: Record<string, { enum?: unknown[]; maxItems?: number }>;
        required: string[];
      };
      expect(classifyClass.properties.truncate.enum).toEqual(['end', 'start', 'none', 'chunks']);
      expect(classifyClass.properties.inputs.maxItems).toBe(96);
      expect(classifyClass.required.sort()).toEqual(['examples', 'inputs', 'model', 'task_type']);
      // The validator dereferences in place: give it a copy.
      const validated = await SwaggerParser.validate(structuredClone(doc) as never);
      expect((validated as { openapi: string }).openapi).toBe('3.0.3');
    } finally {
      await app.close();
      await service.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
