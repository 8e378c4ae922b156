import { describe, expect, it } from 'vitest';
import { attr, int64ToBigInt, ML_DOMAIN, onnx, OnnxGraphBuilder } from '../../../src/artifacts/onnx/index.js';
import { expectClose, f32, i64, openSession, runModel, str } from './ort_helpers.js';

function decode(g: OnnxGraphBuilder) {
  return onnx.ModelProto.decode(g.toBytes());
}

describe('OnnxGraphBuilder', () => {
  it('builds a MatMul + Add graph that onnxruntime runs', async () => {
    const g = new OnnxGraphBuilder();
    const x = g.addInput('x', 'FLOAT', ['batch', 2]);
    const w = g.constant(Float32Array.of(1, 2, 3, 4, 5, 6), [2, 3], { name: 'w' });
    const b = g.addInitializer('b', Float32Array.of(0.5, -0.5, 0), [3]);
    g.addOutput('y', 'FLOAT', ['batch', 3], { from: g.op('Add', [g.op('MatMul', [x, w]), b]) });
    const out = await runModel(g, { x: f32([1, 1, 2, -1], [2, 2]) });
    expect(out.y!.dims).toEqual([2, 3]);
    expectClose(out.y!.data as Float32Array, [5.5, 6.5, 9, -1.5, -1.5, 0]);
  });

  it('declares symbolic and fixed dims, element types and names with special characters', async () => {
    const g = new OnnxGraphBuilder();
    const rti = 'transactions.customer_id->customers.customer_id->transactions.customer_id:price';
    g.addInput(rti, 'FLOAT', ['batch', 'seq', 1]);
    g.addInput('transactions.customer_id', 'STRING', ['batch', 1]);
    g.addInput('flag', 'BOOL', [null, 1]);
    g.addOutput('price_copy', 'FLOAT', ['batch', 'seq', 1], { from: rti });
    g.addOutput('key_copy', 'STRING', ['batch', 1], { from: 'transactions.customer_id' });
    g.addOutput('flag_copy', 'BOOL', [null, 1], { from: 'flag' });
    const session = await openSession(g.toBytes());
    try {
      const meta = Object.fromEntries(session.inputMetadata.map((m) => [m.name, m]));
      const price = meta[rti]!;
      expect(price.isTensor && price.type).toBe('float32');
      expect(price.isTensor && price.shape).toEqual(['batch', 'seq', 1]);
      const key = meta['transactions.customer_id']!;
      expect(key.isTensor && key.type).toBe('string');
      const out = await session.run({
        [rti]: f32([1.5, 2.5], [1, 2, 1]),
        'transactions.customer_id': str(['007'], [1, 1]),
        flag: new (await import('onnxruntime-node')).Tensor('bool', Uint8Array.of(1), [1, 1]),
      });
      expectClose(out.price_copy!.data as Float32Array, [1.5, 2.5]);
      expect(out.key_copy!.data).toEqual(['007']);
      expect(Array.from(out.flag_copy!.data as Uint8Array)).toEqual([1]);
    } finally {
      await session.release();
    }
  });

  it('writes every attribute kind (checked through Constant and LabelEncoder outputs)', async () => {
    const g = new OnnxGraphBuilder();
    const big = 2n ** 60n + 1n; // beyond 2^53: must survive as an exact int64
    g.addOutput('c_int', 'INT64', [], { from: g.op('Constant', [], { value_int: attr.int(big) }) });
    g.addOutput('c_ints', 'INT64', [3], { from: g.op('Constant', [], { value_ints: attr.ints([1, -2n, big]) }) });
    g.addOutput('c_float', 'FLOAT', [], { from: g.op('Constant', [], { value_float: attr.float(0.25) }) });
    g.addOutput('c_floats', 'FLOAT', [2], { from: g.op('Constant', [], { value_floats: attr.floats([1.5, -3]) }) });
    g.addOutput('c_string', 'STRING', [], { from: g.op('Constant', [], { value_string: attr.string('héllo') }) });
    g.addOutput('c_strings', 'STRING', [2], { from: g.op('Constant', [], { value_strings: attr.strings(['a', '']) }) });
    g.addOutput('c_tensor', 'INT32', [2, 2], {
      from: g.op('Constant', [], { value: attr.tensor({ data: Int32Array.of(1, 2, 3, 4), dims: [2, 2] }) }),
    });
    g.addOutput('c_bool', 'BOOL', [2], { from: g.op('Constant', [], { value: attr.tensor({ data: [true, false], dims: [2] }) }) });
    const k = g.addInput('k', 'STRING', ['n']);
    const idx = g.op('LabelEncoder', [k], { keys_strings: attr.strings(['x', 'y']), values_int64s: attr.ints([7, 8]), default_int64: attr.int(-1) }, { domain: ML_DOMAIN });
    g.addOutput('idx', 'INT64', ['n'], { from: idx });
    const out = await runModel(g, { k: str(['y', 'zz', 'x'], [3]) });
    expect((out.c_int!.data as BigInt64Array)[0]).toBe(big);
    expect(Array.from(out.c_ints!.data as BigInt64Array)).toEqual([1n, -2n, big]);
    expect(Array.from(out.c_float!.data as Float32Array)).toEqual([0.25]);
    expect(Array.from(out.c_floats!.data as Float32Array)).toEqual([1.5, -3]);
    expect(out.c_string!.data).toEqual(['héllo']);
    expect(out.c_strings!.data).toEqual(['a', '']);
    expect(out.c_tensor!.dims).toEqual([2, 2]);
    expect(Array.from(out.c_tensor!.data as Int32Array)).toEqual([1, 2, 3, 4]);
    expect(Array.from(out.c_bool!.data as Uint8Array)).toEqual([1, 0]);
    expect(Array.from(out.idx!.data as BigInt64Array)).toEqual([8n, -1n, 7n]);
  });

  it('adds initializers of every payload kind', async () => {
    const g = new OnnxGraphBuilder();
    const cases = {
      f: g.constant(Float32Array.of(1.25, -2), [2], { name: 'f' }),
      d: g.constant(Float64Array.of(1e300), [1], { name: 'd' }),
      i64: g.constant(BigInt64Array.of(-(2n ** 63n), 2n ** 63n - 1n), [2], { name: 'i64' }),
      i32: g.constant(Int32Array.of(-7, 7), [2], { name: 'i32' }),
      s: g.constant(['a', 'ß', ''], [3], { name: 's' }),
      b: g.constant(Uint8Array.of(1, 0), [2], { name: 'b', elemType: 'BOOL' }),
      scalar: g.constant(Float32Array.of(3), [], { name: 'scalar' }),
    };
    for (const [k, v] of Object.entries(cases)) g.addOutput(`out_${k}`, g.elemTypeOf(v)!, undefined, { from: v });
    const out = await runModel(g, {});
    expect(Array.from(out.out_f!.data as Float32Array)).toEqual([1.25, -2]);
    expect(Array.from(out.out_d!.data as Float64Array)).toEqual([1e300]);
    expect(Array.from(out.out_i64!.data as BigInt64Array)).toEqual([-(2n ** 63n), 2n ** 63n - 1n]);
    expect(Array.from(out.out_i32!.data as Int32Array)).toEqual([-7, 7]);
    expect(out.out_s!.data).toEqual(['a', 'ß', '']);
    expect(out.out_b!.type).toBe('bool');
    expect(Array.from(out.out_b!.data as Uint8Array)).toEqual([1, 0]);
    expect(out.out_scalar!.dims).toEqual([]);
  });

  it('records opsets, producer, metadata and doc strings', () => {
    const g = new OnnxGraphBuilder({ docString: 'model doc', modelVersion: 3, domain: 'ai.gnnctl' });
    const x = g.addInput('x', 'INT64', ['batch'], 'the keys');
    g.setMetadata('gnnctl.run_id', 'run-1').setMetadata('gnnctl.task', 'fraud').setMetadata('gnnctl.run_id', 'run-2');
    g.addOutput('y', 'INT64', ['batch'], { from: x, docString: 'copy' });
    let m = decode(g);
    expect(int64ToBigInt(m.irVersion)).toBe(8n);
    expect(m.opsetImport.map((o) => [o.domain, Number(int64ToBigInt(o.version))])).toEqual([['', 17]]);
    expect(m.producerName).toBe('gnnctl');
    expect(m.producerVersion).toMatch(/^\d+\.\d+\.\d+/);
    expect(m.docString).toBe('model doc');
    expect(m.domain).toBe('ai.gnnctl');
    expect(Number(int64ToBigInt(m.modelVersion))).toBe(3);
    expect(m.metadataProps.map((p) => [p.key, p.value])).toEqual([
      ['gnnctl.run_id', 'run-2'],
      ['gnnctl.task', 'fraud'],
    ]);
    expect(m.graph!.input![0]!.docString).toBe('the keys');
    expect(m.graph!.output![0]!.docString).toBe('copy');

    // ai.onnx.ml is imported once a node uses it.
    g.addOutput('z', 'INT64', ['batch'], {
      from: g.op('LabelEncoder', [x], { keys_int64s: attr.ints([1]), values_int64s: attr.ints([0]), default_int64: attr.int(1) }, { domain: ML_DOMAIN }),
    });
    m = decode(g);
    expect(m.opsetImport.map((o) => [o.domain, Number(int64ToBigInt(o.version))])).toEqual([
      ['', 17],
      ['ai.onnx.ml', 3],
    ]);
  });

  it('generates unique names and refuses duplicates', () => {
    const g = new OnnxGraphBuilder();
    expect(g.uniqueName('a->b:c')).toBe('a__b_c');
    expect(g.uniqueName('a->b:c')).toBe('a__b_c_1');
    const x = g.addInput('x', 'FLOAT', [1]);
    expect(g.uniqueName('x')).toBe('x_1');
    const [r1] = g.addNode('Relu', [x]);
    const [r2] = g.addNode('Relu', [x]);
    expect(r1).not.toBe(r2);
    expect(() => g.addInput('x', 'FLOAT', [1])).toThrow(/"x": the name is already used/);
    expect(() => g.addInitializer('x', Float32Array.of(1), [1])).toThrow(/already used/);
    expect(() => g.addNode('Relu', [x], [r1!])).toThrow(/already used/);
    const names = decode((g.addOutput('y', 'FLOAT', [1], { from: r2! }), g)).graph!.node!.map((n) => n.name);
    expect(new Set(names).size).toBe(names.length);
  });

  it('fails at the call that uses an undefined value, with a suggestion', () => {
    const g = new OnnxGraphBuilder();
    g.addInput('transactions.price', 'FLOAT', ['batch', 1]);
    expect(() => g.op('Relu', ['transactions.prices'])).toThrow(/input "transactions.prices" is not a graph input.*did you mean "transactions.price"/);
    expect(() => g.op('Foo', ['transactions.price'], undefined, { domain: 'com.example' })).toThrow(/no opset version for domain "com.example"/);
  });

  it('requires declared outputs to be produced', () => {
    const g = new OnnxGraphBuilder();
    const x = g.addInput('x', 'FLOAT', [1]);
    expect(() => g.toBytes()).toThrow(/declares no outputs/);
    g.addOutput('y', 'FLOAT', [1]);
    expect(() => g.toBytes()).toThrow(/output "y" is declared but no node produces it/);
    g.addNode('Relu', [x], ['y']);
    expect(() => g.toBytes()).not.toThrow();
  });

  it('checks initializer sizes against dims', () => {
    const g = new OnnxGraphBuilder();
    expect(() => g.constant(Float32Array.of(1, 2, 3), [2, 2])).toThrow(/3 values do not fill dims \[2, 2\]/);
    expect(() => g.constant(Int32Array.of(1), [1], { elemType: 'FLOAT' })).toThrow(/Int32Array cannot hold FLOAT/);
  });

  it('releases onnxruntime sessions (a released session refuses to run)', async () => {
    const g = new OnnxGraphBuilder();
    g.addOutput('y', 'FLOAT', [1], { from: g.op('Relu', [g.addInput('x', 'FLOAT', [1])]) });
    const session = await openSession(g.toBytes());
    expect(Array.from((await session.run({ x: f32([-2], [1]) })).y!.data as Float32Array)).toEqual([0]);
    await session.release();
    await expect(session.run({ x: f32([1], [1]) })).rejects.toThrow();
  });

  it('runs int64 keys through a graph and keeps int64 exact', async () => {
    const g = new OnnxGraphBuilder();
    const k = g.addInput('k', 'INT64', ['n']);
    g.addOutput('k2', 'INT64', ['n'], { from: g.op('Add', [k, g.constant(BigInt64Array.of(1n), [], { name: 'one' })]) });
    const out = await runModel(g, { k: i64([2n ** 62n, -5n], [2]) });
    expect(Array.from(out.k2!.data as BigInt64Array)).toEqual([2n ** 62n + 1n, -4n]);
  });
});
