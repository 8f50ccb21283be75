// The help pages of the client commands, which talk to a running service: train, models, predict, classify,
// shadow and pull. Part of the one table help.ts prints from.
import { kDefaultAdapterRank, kDefaultFinetuneMethod, kMaxRequestAdapterRank } from '../contract/train-request.js';
import { type CommandHelp, kConnectionOptions, kHelpOption } from './help-options.js';

export const kClientHelp: Readonly<Record<string, CommandHelp>> = {
  train: {
    summary: 'train a classifier from an examples file',
    usage: [
      'train --examples <file> [--label-text "..."] [--task-type <type>] [--balanced] [--model svc-small] [--frozen | --finetune adapter|full [--rank <r>]] [--num-iterations <n>] [--truncate <mode>] [--version-of <id>] [--wait]',
      'train --teacher provider-a:<name> --project <id> --texts <file> (--label-text "..." | --labels <a,b,...>) [--task-type <type>] [--instructions "..."] [--texts-per-call <n>] [--budget <n>] [--frozen] [--wait]',
      'train --from-log --project <id> (--label-text "..." | --labels <a,b,...>) (--label-pointer P | --label-regex R [--label-flags i] | --label-words \'label=w1,w2;label2=w3\') [--since T] [--until T] [--log-model <proxied model>] [--text-pointer P] [--holdout 0.2] [--frozen] [--wait]',
    ],
    options: [
      ['--examples <file>', 'the labelled examples (formats below)'],
      ['--label-text "..."', 'binary: what label true means, e.g. "positive review" (else each row\'s label_text)'],
      ['--task-type <type>', 'binary-classification (default), multi-class-classification or multi-label-classification'],
      ['--balanced', "multi-class and multi-label: class_weight 'balanced', for skewed examples"],
      ['--model <name>', 'the base model (default svc-small)'],
      ['--frozen', 'fit the head on the frozen encoder only; no fine-tuning'],
      [
        '--finetune adapter|full',
        `adapter: a LoRA adapter on the frozen base (~0.7 MB a model); full: the whole encoder (~90 MB); default ${kDefaultFinetuneMethod}`,
      ],
      ['--rank <r>', `with --finetune adapter: the adapter's rank (default ${kDefaultAdapterRank}, at most ${kMaxRequestAdapterRank})`],
      ['--num-iterations <n>', 'fine-tuning pair rounds per example (default 20)'],
      ['--truncate <mode>', 'examples past 256 tokens: end (default), start, none (refused) or chunks (the head reads them whole)'],
      [
        '--version-of <id>',
        'train the next version of that classifier (not live until svc models promote); sends it as model_id and prints the model object <id>@<n>',
      ],
      ['--teacher <model>', 'a chat model, as the proxy names it, labels the texts of --texts instead (docs/teacher.md)'],
      ['--project <id>', "with --teacher: the project whose proxy the teacher's calls go through, logged and budgeted"],
      ['--texts <file>', 'with --teacher: the texts to label, one a line (.txt), JSON Lines of {"text": ...}, or a JSON array'],
      ['--labels <a,b,...>', 'with --teacher: the class or label names (multi-class, multi-label)'],
      ['--instructions "..."', 'with --teacher: what the labels mean, in words'],
      ['--texts-per-call <n>', 'with --teacher: texts labelled in one call (default 10)'],
      ['--budget <n>', 'with --teacher: label at most n of the texts'],
      ['--from-log', "the examples are the project's logged chat calls (--project): each call's text and its reply's label"],
      ['--label-pointer <P>', 'with --from-log: the label is at this JSON pointer of the reply parsed as JSON (e.g. /label)'],
      ['--label-regex <R>', "with --from-log: the label is this regex's first capture group or whole match (--label-flags i: any case)"],
      ['--label-words <W>', 'with --from-log: label=word,word;label=word (binary: true=yes;false=no), matched whole, any case'],
      ['--since <T>', 'with --from-log: calls from T on (ISO-8601 such as 2026-11-01 or 2026-11-01T09:00:00Z, or unix ms)'],
      ['--until <T>', 'with --from-log: calls before T (default now)'],
      ['--log-model <name>', 'with --from-log: only calls to this proxied model as clients send it (provider-a:gpt-4o-mini)'],
      ['--text-pointer <P>', "with --from-log: the call's text at this JSON pointer of the request (default: the last user message)"],
      ['--holdout <share>', 'with --from-log: share of the labelled calls kept back to measure agreement (default 0.2, at most 0.5)'],
      ['--wait', 'poll until trained, showing the stage and the loss (the tokens spent while a teacher labels) on stderr'],
      ...kConnectionOptions,
      kHelpOption,
    ],
    examples: [
      'svc train --examples examples/train.jsonl --wait',
      'svc train --teacher provider-a:gpt-4o-mini --project proj_0123456789ab --texts tickets.txt --label-text "billing question" --wait',
      'svc train --examples reviews.csv --label-text spam --frozen',
      'svc train --examples reviews.csv --label-text spam --finetune adapter --rank 8 --wait',
      'svc train --examples train.json --wait        # the JSON body POST /v2/train takes',
      'svc train --examples tickets.csv --task-type multi-class-classification --frozen --wait',
      'svc train --examples tags.jsonl --task-type multi-label-classification --wait',
      "svc train --from-log --project proj_0123456789ab --label-text 'billing question' --label-regex '^(yes|no)' --label-flags i --frozen --wait",
    ],
    notes:
      'Examples files: JSONL, one {"text": "...", "label": true} per line; CSV or TSV with a header\n' +
      'naming the text and label columns (and optionally label_text), delimited by comma, semicolon\n' +
      'or tab (detected from the header); a JSON array of examples; or a /v2/train body\n' +
      '{"examples": [...]}. Labels are true/false, 1/0 or yes/no. Multi-class: label names the class\n' +
      '(at least 8 examples each). Multi-label: a labels column, a JSON array per example, or in CSV\n' +
      'names separated by | (an empty cell: no label). Prints the model object.\n' +
      "--from-log: calls whose label cannot be read are skipped and sampled in the model's training_data;\n" +
      'its evaluation report is the agreement with the chat model on the held-out calls (docs/cli.md).',
  },
  models: {
    summary:
      "list the models (status, task, labels), show one with its labels and metrics, list its versions, promote one, show a version's evaluation report, or delete",
    usage: [
      'models list [--json]',
      'models show <id>[@<n>]',
      'models versions <id>',
      'models promote <id> <n>',
      'models evaluation <id>[@<n>]',
      'models delete <id>[@<n>]',
    ],
    options: [...kConnectionOptions, ['--json', "list: the service's answer (GET /v2/models) as JSON instead of the table"], kHelpOption],
    examples: [
      'svc models list',
      'svc models show svc-small-5b8257b3efa7',
      'svc models versions svc-small-5b8257b3efa7',
      'svc models promote svc-small-5b8257b3efa7 2',
      'svc models evaluation svc-small-5b8257b3efa7@2',
      'svc models delete svc-small-5b8257b3efa7@2',
    ],
    notes:
      "list prints a table: ID, STATUS (training, trained or failed), TASK and LABELS (a binary model's\n" +
      'label_text, the labels of the others). The other actions print model objects. A trained model\n' +
      'has metrics: train_accuracy, cv_accuracy and cv_macro_f1\n' +
      '(stratified k-fold cross-validation of the head on the training examples, cv_folds folds),\n' +
      "cv_encoder ('trained': measured on the model's own encoder, frozen models; 'base': on the base\n" +
      'encoder, fine-tuned models, a conservative estimate since their encoder saw every example), and\n' +
      'validation_accuracy and validation_macro_f1 when the train request sent a validation set.\n' +
      'delete removes the model and its hub copy and prints {id, object, deleted: true}.\n' +
      'Versions: `svc train --version-of <id>` trains the next version of a classifier (same task\n' +
      'type and labels); it is not live until `svc models promote <id> <n>`, and promoting an older\n' +
      'one rolls back. <id>@<n> names version n (predict --model takes it too); delete <id>@<n>\n' +
      "removes only that version (not the live one, not version 1). evaluation prints a version's report\n" +
      '(confusion matrix, per-label scores, binary thresholds and calibration): on its validation set,\n' +
      'else from the cross-validation of its examples (source says which).',
  },
  predict: {
    summary: 'classify texts with a trained model',
    usage: ['predict --model <id> [--threshold <0..1>] [--truncate <mode>] [--explain <k>] "text" ...'],
    options: [
      ['--model <id>', 'the model id `svc train` printed'],
      ['--threshold <0..1>', 'multi-label models: the probability a label needs (default 0.5); per label: a=0.3,b=0.6'],
      ['--truncate <mode>', 'texts past 256 tokens: end (default), start, none (refused) or chunks (read whole in windows)'],
      ['--explain <k>', 'add the k training examples nearest each text, with their labels and similarity'],
      ...kConnectionOptions,
      kHelpOption,
    ],
    examples: ['svc predict --model svc-small-5b8257b3efa7 "A moving story." "Two hours I will never get back."'],
    notes:
      'Prints {model, label_text, predictions: [{label, probability}]} (multi-class: label, probability and\n' +
      'scores by class; multi-label: labels and scores). Texts starting with - go after --.',
  },
  classify: {
    summary: 'classify texts by examples sent with them, or by label names, with no model trained',
    usage: [
      'classify (--examples <file> | --labels <a,b,...> | --label-text <text>) [--task-type <type>] [--threshold <0..1>] [--truncate <mode>] [--explain <k>] "text" ...',
    ],
    options: [
      ['--examples <file>', 'labelled examples, in any format svc train reads (at least 2 per label, at most 2,500)'],
      ['--labels <a,b,...>', 'no examples: zero-shot from these class names (multi-class, or multi-label with --task-type)'],
      ['--label-text <text>', 'no examples: zero-shot binary, what label true means; with --examples, as for svc train'],
      ['--task-type <type>', 'binary-classification, multi-class-classification or multi-label-classification'],
      ['--model <name>', 'base encoder (default svc-small)'],
      ['--threshold <0..1>', 'binary: the probability true needs; multi-label: a label needs (a=0.3,b=0.6 per label); default 0.5'],
      ['--truncate <mode>', 'texts past 256 tokens: end (default), start, none (refused) or chunks (read whole in windows)'],
      ['--explain <k>', 'add the k examples nearest each text, with their labels and similarity'],
      ...kConnectionOptions,
      kHelpOption,
    ],
    examples: [
      'svc classify --examples reviews.jsonl "A moving story."',
      'svc classify --labels sports,economy "The striker scored twice."',
    ],
    notes: "Prints the /v2/classify answer: predict's shape, with zero_shot (docs/classify.md). At most 96 texts.",
  },
  shadow: {
    summary: "run a classifier beside a project's proxied model and see how often it agrees with the chat model",
    usage: [
      'shadow set --project <id> --model <proxied model> --classifier <id> (--label-pointer P | --label-regex R | --label-words W) [--text-pointer P]',
      'shadow list --project <id>',
      'shadow remove --project <id> --model <proxied model>',
      'shadow stats --project <id> [--window 1h|24h|7d|30d] [--model <proxied model>]',
    ],
    options: [
      ['--project <id>', 'the project whose proxied calls are shadowed'],
      ['--model <name>', 'the proxied model as clients send it, e.g. provider-a:gpt-4o-mini'],
      ['--classifier <id>', 'a classifier of your organization; its live version answers'],
      ['--label-pointer <P>', 'the label is at this JSON pointer of the reply (e.g. /label)'],
      ['--label-regex <R>', "the label is this regex's first group (--label-flags i for case)"],
      ['--label-words <W>', 'label=word,word;label=word (binary: true=yes;false=no)'],
      ['--text-pointer <P>', "the call's text: a JSON pointer into the request (default: the last user message)"],
      ['--window <w>', 'stats over the last 1h or 24h (by hour), 7d (default) or 30d (by day)'],
      ...kConnectionOptions,
      kHelpOption,
    ],
    examples: [
      "svc shadow set --project proj_0123456789ab --model provider-a:gpt-4o-mini --classifier svc-small-5b8257b3efa7 --label-words 'true=yes;false=no'",
      'svc shadow stats --project proj_0123456789ab --window 24h',
    ],
    notes:
      "Each proxied call of the model is classified off the request path and compared with the chat model's\n" +
      'label read by the rule (docs/proxy.md, "Shadow classifier"). stats prints agreement by hour or day,\n' +
      "the classifier's p50 latency, and the tokens and chat time it would have saved. Setting one needs\n" +
      'proxy access.',
  },
  pull: {
    summary: "download a model directory from the service's hub",
    usage: ['pull <org>/<model_id> [--dir <dir>]'],
    options: [['--dir <dir>', 'where to write it (default ./<model_id>)'], ...kConnectionOptions, kHelpOption],
    examples: ['svc pull acme/svc-small-5b8257b3efa7 --dir ./model'],
    notes: 'Prints the directory. It loads in transformers.js and with Classifier.load.',
  },
};
