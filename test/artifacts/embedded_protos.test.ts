import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EMBEDDED_PROTOS, generatedPath, generatedSource } from '../../scripts/embed_protos.mjs';

const root = join(import.meta.dirname, '..', '..');

describe('.proto schemas embedded for the build', () => {
  const protos = (EMBEDDED_PROTOS as { proto: string; constant: string }[]).filter((p) => existsSync(join(root, p.proto)));

  it('covers the Triton model config, ONNX and KServe V2 gRPC schemas', () => {
    expect(protos.map((p) => p.proto)).toEqual(['src/artifacts/triton/model_config.proto', 'src/artifacts/onnx/onnx.proto', 'src/artifacts/triton/grpc_service.proto']);
  });

  it.each(protos)('$proto: the generated module embeds exactly the vendored file (else run npm run embed-protos)', async ({ proto, constant }) => {
    const text = readFileSync(join(root, proto), 'utf8');
    const generated = generatedPath(proto) as string;
    expect(readFileSync(join(root, generated), 'utf8')).toBe(generatedSource(proto, constant, text));
    const mod = (await import(join(root, generated.replace(/\.ts$/, '.js')))) as Record<string, string>;
    expect(mod[constant]).toBe(text);
  });

  it.each(protos)('$proto names where its declarations come from', ({ proto }) => {
    const text = readFileSync(join(root, proto), 'utf8');
    expect(text.slice(0, 400)).toMatch(/triton-inference-server\/common `protobuf\/(model_config|grpc_service)\.proto`|onnx\/onnx `onnx\/onnx\.proto`/);
  });
});
