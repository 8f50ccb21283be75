import { execFileSync } from 'node:child_process';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';

import { cpuInfo, SvcError } from '../../src/index.js';
import { loadAddon, packageRoot } from '../../src/native/index.js';

const kLevels = ['avx512-amx', 'avx512-vnni', 'avx512', 'avx2-vnni', 'avx2', 'neon-dotprod', 'neon', 'scalar'];

// Runs a snippet in a fresh Node process with the given environment, from the package root.
function runNode(source: string, env: Record<string, string>): string {
  return execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', source], {
    cwd: packageRoot(),
    env: { ...process.env, ...env },
    encoding: 'utf8',
  }).trim();
}

describe('native addon', () => {
  it('loads and reports the CPU level it dispatches to', () => {
    const info = cpuInfo();
    expect(kLevels).toContain(info.level);
    expect(info.avx512vnni ? info.avx512 : true).toBe(true);
    expect(info.avx512 ? info.avx2 : true).toBe(true);
    expect(info.avxvnni ? info.avx2 : true).toBe(true);
    expect(loadAddon().napiVersion).toBe(8);
  });

  it('loads inside a worker thread with its own instance data', async () => {
    const worker = new Worker(
      `const { parentPort } = require('node:worker_threads');
       const addon = require(${JSON.stringify(`${packageRoot()}/build/Release/svc_classify.node`)});
       parentPort.postMessage(addon.cpuInfo().level);`,
      { eval: true },
    );
    const level = await new Promise((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    await worker.terminate();
    expect(level).toBe(cpuInfo().level);
  });

  it("counts the bytes the C allocator holds, an ArrayBuffer's backing store among them", () => {
    const addon = loadAddon();
    const report = process.report.getReport() as { header: { glibcVersionRuntime?: string } };
    if (report.header.glibcVersionRuntime) {
      const before = addon.mallocBytesInUse()!;
      const buffer = new ArrayBuffer(16 << 20);
      const during = addon.mallocBytesInUse()!;
      expect(during - before).toBeGreaterThanOrEqual(16 << 20);
      expect(during - before).toBeLessThan(17 << 20);
      expect(buffer.byteLength).toBe(16 << 20);
    } else {
      expect(addon.mallocBytesInUse()).toBeNull();
    }
  });

  it('caps the kernel level with SVC_ISA', () => {
    const source = "import { cpuInfo } from './src/index.ts'; console.log(cpuInfo().level);";
    expect(runNode(source, { SVC_ISA: 'scalar' })).toBe('scalar');
    if (cpuInfo().avx2) expect(runNode(source, { SVC_ISA: 'avx2' })).toBe('avx2');
    if (cpuInfo().avxvnni) expect(runNode(source, { SVC_ISA: 'avx2-vnni' })).toBe('avx2-vnni');
    if (cpuInfo().amx) expect(runNode(source, { SVC_ISA: 'avx512-vnni' })).toBe('avx512-vnni');
  });

  it('says what is wrong when SVC_ADDON_PATH names a missing file', () => {
    const source = `import { loadAddon } from './src/native/index.ts';
      try { loadAddon(); console.log('loaded'); } catch (e) { console.log(e.code + ' | ' + e.message); }`;
    const out = runNode(source, { SVC_ADDON_PATH: '/nonexistent/svc_classify.node' });
    expect(out).toBe(
      'native_missing | svc-classify: SVC_ADDON_PATH is set to /nonexistent/svc_classify.node, which does not exist. ' +
        'Point it at a built svc_classify.node, or unset it to use the addon installed with the package.',
    );
    expect(new SvcError('native_missing', 'x').status).toBe(500);
  });
});
