// The public types of `svc-classify`, pinned: a change that breaks a user's code at compile time
// fails here (vitest's typecheck, run by `npm test`) before it reaches a release.
import { expectTypeOf } from 'expect-type';
import { describe, it } from 'vitest';

import * as library from '../../src/index.js';
import {
  type BinaryTrainRequest,
  Classifier,
  type ClassPrediction,
  type LabelSetPrediction,
  type MultiClassTrainRequest,
  type Prediction,
  type SvcErrorCode,
  SvcError,
  type TaskType,
  type TrainRequest,
  train,
  validateTrainRequest,
} from '../../src/index.js';

describe('svc-classify types', () => {
  it('train gives the classifier of the request task type', () => {
    expectTypeOf(train).toBeCallableWith({ model: 'svc-small', task_type: 'binary-classification', examples: [] });
    const binary = {} as BinaryTrainRequest;
    const multiClass = {} as MultiClassTrainRequest;
    expectTypeOf(train(binary)).resolves.toEqualTypeOf<Classifier<'binary-classification'>>();
    expectTypeOf(train(multiClass)).resolves.toEqualTypeOf<Classifier<'multi-class-classification'>>();
  });

  it('predict takes one text for one prediction and an array for an array, shaped by the task type', () => {
    const binary = {} as Classifier;
    expectTypeOf(binary.predict('text')).resolves.toEqualTypeOf<Prediction>();
    expectTypeOf(binary.predict(['a', 'b'])).resolves.toEqualTypeOf<Prediction[]>();
    expectTypeOf<Prediction['label']>().toEqualTypeOf<boolean>();
    expectTypeOf<Prediction['probability']>().toEqualTypeOf<number>();
    const classes = {} as Classifier<'multi-class-classification'>;
    expectTypeOf(classes.predict('text')).resolves.toEqualTypeOf<ClassPrediction>();
    expectTypeOf<ClassPrediction['label']>().toEqualTypeOf<string>();
    const labels = {} as Classifier<'multi-label-classification'>;
    expectTypeOf(labels.predict(['text'])).resolves.toEqualTypeOf<LabelSetPrediction[]>();
    expectTypeOf<LabelSetPrediction['labels']>().toEqualTypeOf<string[]>();
  });

  it('Classifier.load defaults to a binary classifier', () => {
    expectTypeOf(Classifier.load('model-dir')).resolves.toEqualTypeOf<Classifier<'binary-classification'>>();
    expectTypeOf(Classifier.load<'multi-label-classification'>('model-dir')).resolves.toEqualTypeOf<
      Classifier<'multi-label-classification'>
    >();
  });

  it('train requests are told apart by task_type', () => {
    expectTypeOf<TrainRequest['task_type']>().toEqualTypeOf<TaskType>();
    expectTypeOf<TaskType>().toEqualTypeOf<'binary-classification' | 'multi-class-classification' | 'multi-label-classification'>();
    expectTypeOf(validateTrainRequest).parameter(0).toBeUnknown();
    expectTypeOf(validateTrainRequest).returns.toEqualTypeOf<TrainRequest>();
  });

  it('SvcError carries a code from a closed list and an HTTP status', () => {
    expectTypeOf<SvcError['code']>().toEqualTypeOf<SvcErrorCode>();
    expectTypeOf<SvcError['status']>().toEqualTypeOf<number>();
    expectTypeOf<'not_found'>().toExtend<SvcErrorCode>();
    expectTypeOf<SvcError>().toExtend<Error>();
  });

  it('exports no zod schema and no internal helper: the library validates with functions', () => {
    expectTypeOf(library).not.toHaveProperty('trainRequestSchema');
    expectTypeOf(library).not.toHaveProperty('classifyRequestSchema');
    expectTypeOf(library).not.toHaveProperty('numIterations');
    expectTypeOf(library).not.toHaveProperty('labelNames');
    expectTypeOf(library).toHaveProperty('validateClassifyRequest');
  });

  it("an encoder asked for 'auto' reports the precision it runs, never 'auto'; kernelChoice says why", () => {
    expectTypeOf(library.Encoder.fromPretrained).toBeCallableWith('svc-small', { precision: 'auto' });
    expectTypeOf<library.Encoder['precision']>().toEqualTypeOf<library.EncoderPrecision>();
    expectTypeOf<library.PrecisionSetting>().toEqualTypeOf<'fp32' | 'int8' | 'bf16' | 'auto'>();
    expectTypeOf(library.kernelChoice(2).precision).toEqualTypeOf<'fp32' | 'bf16'>();
    expectTypeOf(library.kernelChoice(2).source).toEqualTypeOf<'measured' | 'cache' | 'forced'>();
    expectTypeOf<library.KernelRate['kernel']>().toEqualTypeOf<library.KernelName>();
    expectTypeOf(library.configurePool).toBeCallableWith({ precision: 'auto' });
  });

  it('a Hub is where model files live: a folder implements it, files stream with their sizes', () => {
    expectTypeOf<library.DirectoryHub>().toMatchTypeOf<library.Hub>();
    expectTypeOf<library.Hub['list']>().returns.resolves.toEqualTypeOf<library.HubFile[]>();
    expectTypeOf<library.Hub['open']>().returns.resolves.toEqualTypeOf<library.HubFileReader>();
    expectTypeOf<library.HubFileReader['stream']>().toEqualTypeOf<import('node:stream').Readable>();
    expectTypeOf<library.LoadOptions['hub']>().toEqualTypeOf<library.Hub | undefined>();
    expectTypeOf<library.SaveOptions['transformersJs']>().toEqualTypeOf<boolean | undefined>();
    expectTypeOf<library.Classifier['save']>().toBeCallableWith('./model', { transformersJs: false });
  });
});
