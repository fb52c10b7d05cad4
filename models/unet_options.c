/* The command line of models/unet (see unet_options.h and the usage below). */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/unet_convention.h"
#include "models/unet_options.h"

#define fail(...) starnn_fail("unet", __VA_ARGS__)

static void usage(FILE *f)
{
	fprintf(f,
	        "Usage: models/unet train|eval|predict|info [OPTIONS]\n"
	        "The SEVIR nowcasting UNet (13 VIL frames in, 12 out) on StarPU: every training\n"
	        "step is one task graph spread over all workers, and step k+1 is submitted\n"
	        "before the loss of step k is read, so consecutive steps overlap. StarPU's\n"
	        "variables apply (STARPU_SCHED, STARPU_NCPU, STARPU_NCUDA, ...).\n"
	        "\n"
	        "  train    train a model; --checkpoint FILE saves it (also every\n"
	        "           --checkpoint-every steps), --resume FILE continues a run exactly\n"
	        "  eval     metrics of --checkpoint FILE on the evaluation data, beside\n"
	        "           persistence (the last input frame repeated)\n"
	        "  predict  forecasts of --checkpoint FILE: --output FILE.h5 and/or --png DIR\n"
	        "  info     the layers, output shapes and parameter count\n"
	        "\n"
	        "Data:\n"
	        "  --data synthetic|FILE   training data (train) or the data to evaluate / forecast\n"
	        "                          (eval, predict: its TEST split); FILE: a raw SEVIR event\n"
	        "                          file (vil, id + CATALOG.csv) or a prepared file (IN, OUT);\n"
	        "                          default synthetic\n"
	        "  --val-data synthetic|FILE  evaluation data during training (default: the TEST\n"
	        "                          split of --data: synthetic, or the same file)\n"
	        "  --catalog FILE          CATALOG.csv of raw files (default: beside the file)\n"
	        "  --size N                image size H = W (a multiple of 2^depth; default: the\n"
	        "                          data's own size)\n"
	        "  --resize crop|downsample  how larger images come to --size (default crop:\n"
	        "                          random crops for training, centre crops for evaluation)\n"
	        "  --synthetic-size N      size of the generated images (default: --size, else 128)\n"
	        "  --samples N             synthetic training samples (default 256)\n"
	        "  --val-samples N         synthetic evaluation samples (default 64)\n"
	        "  --shuffle on|off        shuffle the training samples each epoch (default on;\n"
	        "                          off: file order)\n"
	        "\n"
	        "Model:\n"
	        "  --depth N               encoder levels, 1..5 (default 4)\n"
	        "  --filters N             filters of the first level, f (default 32)\n"
	        "  --in-frames N           input frames (default 13)\n"
	        "  --out-frames N          predicted frames (default 12)\n"
	        "  --convention C          a new model's conventions: keras (default: the study's\n"
	        "                          Keras UNet, decoder concatenation [skip, up], BatchNorm\n"
	        "                          eps 1e-3) or starnn-v1 (starnn's first models: [up, skip],\n"
	        "                          eps 1e-5); a checkpoint's model keeps its own (one without\n"
	        "                          the attribute is starnn-v1)\n"
	        "\n"
	        "Training:\n"
	        "  --batch N               samples per step (default 8; under mpirun: over all ranks)\n"
	        "  --micro-batches N       micro-batches per step (default: one per worker, at\n"
	        "                          most 8 and the batch; under mpirun: per rank)\n"
	        "  --bn-sync global|local  under mpirun: BatchNorm statistics over the global\n"
	        "                          batch (default; the model one rank trains) or per rank\n"
	        "  --wire-grads F          under mpirun: the gradients' all-reduce sends its chunks\n"
	        "                          compressed: none (default, fp32), bf16, fp16, trunc16,\n"
	        "                          rne16, trunc24, rne24, int8 or fp8 (codelets/wire.h);\n"
	        "                          every rank gets the same rounded sum; with --master\n"
	        "                          host, the format of the gradients sent to the host\n"
	        "  --shard-optimizer       under mpirun: each parameter is updated by one rank, its\n"
	        "                          owner, which alone keeps its optimizer state; gradients\n"
	        "                          are reduced to the owner, weights sent back from it\n"
	        "  --master host|auto      host: fp32 masters and their update on the host (CPU\n"
	        "                          workers); each step the weights go to every device\n"
	        "                          in --wire-weights' format, gradients come back in\n"
	        "                          --wire-grads' (docs/device-edge.md); auto (default):\n"
	        "                          the update where StarPU places it\n"
	        "  --wire-weights F        with --shard-optimizer or --master host: the weights\n"
	        "                          travel as F: none (default, fp32), awp (adaptive per\n"
	        "                          layer, 8 -> 16 -> 24 -> 32 bits), or a format of\n"
	        "                          --wire-grads; every rank / device computes with the\n"
	        "                          weights as they arrived\n"
	        "  --awp-start-bits N      awp: bits per value to start with, 8 16 24 32 (default 8)\n"
	        "  --awp-stride N          awp: bits gained at a time, 8 16 24 (default 8)\n"
	        "  --awp-interval N        awp: small steps in a row before a layer gains bits\n"
	        "                          (default 10)\n"
	        "  --awp-rule R            awp: when a step is small: paper (default: its layer's\n"
	        "                          weight norm grew by at most --awp-rel-res relatively)\n"
	        "                          or resolution (the step's norm is at most\n"
	        "                          --awp-res-factor times what the layer's format\n"
	        "                          resolves of the weights' norm)\n"
	        "  --awp-rel-res X         awp paper rule: the threshold (default 8e-5)\n"
	        "  --awp-res-factor K      awp resolution rule: the factor (default 0.0625)\n"
	        "  --awp-rounding R        awp: trunc (the paper's: drop the low bytes) or rne\n"
	        "  --epochs N              passes over the training data (default 1)\n"
	        "  --steps N               total steps instead of epochs (a resumed run continues\n"
	        "                          up to step N); 0 with --checkpoint saves the initial model\n"
	        "  --optimizer adam|sgd    default adam\n"
	        "  --lr X                  peak learning rate (default 0.001)\n"
	        "  --warmup N              linear learning-rate warm-up over N steps (default 0)\n"
	        "  --momentum X            SGD momentum (default 0.9)\n"
	        "  --weight-decay X        L2 weight decay (default 0)\n"
	        "  --seed N                initial weights, shuffling, crops, synthetic data (default 1)\n"
	        "  --checkpoint FILE       train: write the model here at the end (atomically);\n"
	        "                          eval, predict, info: the model to use\n"
	        "  --checkpoint-every N    train: also write it every N steps\n"
	        "  --resume FILE           continue the run saved in FILE (options not given are\n"
	        "                          taken from it, --steps too; another architecture is\n"
	        "                          refused)\n"
	        "  --init FILE             start from the weights of FILE (not its optimizer state)\n"
	        "  --eval-every N          evaluate every N steps (default: at the end only; 0: never)\n"
	        "  --precision P           fp32 (default), amp-fp16 or amp-bf16: fp32 master weights\n"
	        "                          and optimizer state, activations and their gradients in\n"
	        "                          16 bits, fp32 accumulation, BN statistics and loss in fp32.\n"
	        "                          Checkpoints hold fp32 weights, the precision and the\n"
	        "                          loss-scale state; --resume, eval and predict use the\n"
	        "                          checkpoint's precision unless P is given. Resuming with\n"
	        "                          another P or --loss-scale is allowed, with a note: fp32\n"
	        "                          weights, optimizer state and step counts carry over, a\n"
	        "                          changed loss scaling starts afresh (not the run an\n"
	        "                          uninterrupted one would be)\n"
	        "  --loss-scale S          dynamic (start 2^16, halve on overflow and skip the step,\n"
	        "                          double after 2000 clean steps), N (static) or none;\n"
	        "                          default dynamic for amp-fp16, none otherwise (--resume:\n"
	        "                          the checkpoint's, state included, if P is unchanged)\n"
	        "\n"
	        "Output:\n"
	        "  --log-json FILE         one JSON object per line: per step {step, epoch (from 1),\n"
	        "                          loss, lr, samples_per_s, elapsed (s)}, per evaluation\n"
	        "                          {step, epoch, eval: metrics}; eval: the metrics; last,\n"
	        "                          the summary record (Energy below). Every\n"
	        "                          step's own loss is logged; a step's time ends when its\n"
	        "                          loss is read, after its forward (so the first step,\n"
	        "                          and the first after an evaluation, look faster)\n"
	        "  --log-every N           plain progress line every N steps when not on a terminal\n"
	        "                          (default 10)\n"
	        "  --progress on|off       progress bar (default: on when stdout is a terminal)\n"
	        "  --output FILE.h5        predict: forecasts in the prepared layout (OUT, raw VIL)\n"
	        "  --png DIR               predict: a picture per sample, DIR/sample<i>.png (the last\n"
	        "                          inputs, the truth and the forecast over the lead times)\n"
	        "  --png-samples N         predict: samples pictured (default 4)\n"
	        "  --quiet                 only errors and final results\n"

	        "  -h, --help              this text\n"
	        "\n"
	        "Energy (train, eval): the last lines give the energy measured over the\n"
	        "training or evaluation (RAPL, perf or NVML; else 'not available' and why), and\n"
	        "--log-json ends with a summary record {summary: steps, epochs, samples,\n"
	        "elapsed, samples_per_s, energy}. A power model adds estimated figures, apart:\n"
	        "  --cpu-watts W           W per busy CPU worker (StarPU worker profiling)\n"
	        "  --gpu-watts W           W per busy CUDA worker\n"
	        "  --idle-watts W          W of the whole machine over the whole run\n"
	        "\n"
	        "Environment (README, \"Environment variables\"): STARNN_DATA_MEMORY_MB=M:\n"
	        "prepared files of up to M MiB in memory (uint8 values as bytes, floats as\n"
	        "float32) are kept in memory when opened (default 256; 0: read every batch\n"
	        "from the file); the data: start-up line says (in memory). STARNN_CPU_SIMD=generic|avx2|avx512 caps the\n"
	        "instruction set of starnn's CPU kernels (default: the best the CPU has).\n"
	        "StarPU's variables apply (STARPU_SCHED, STARPU_NCPU, STARPU_NCUDA, ...).\n"
	        "Test hooks (builds configured with --enable-test-hooks, as tools/setup does):\n"
	        "the convolutions' routes (STARNN_LAYOUT, STARNN_CONV2D_*, STARNN_CONVT2D,\n"
	        "STARNN_CUDA_HALF_CONV: docs/convolutions.md; the activations:, weight\n"
	        "gradients: and 3x3 convolutions: start-up lines say what ran);\n"
	        "STARNN_UNET_INJECT_INF_STEP=N puts an Inf into one gradient at training step\n"
	        "N (needs loss scaling): the step is skipped; STARNN_TEST_WRITE_PAUSE_MS=N\n"
	        "pauses checkpoint writes N ms half-way, and every output write N ms before\n"
	        "its rename (kills in the middle of a write).\n"
	        "\n"
	        "A loss that is not finite (diverged) stops training with exit status 1; it is\n"
	        "seen at most one step later (the next step is already running, not logged).\n"
	        "SIGINT (Ctrl-C) or SIGTERM finishes the steps already submitted (at most\n"
	        "two), saves --checkpoint and exits with 128 + the signal number (130, 143);\n"
	        "a second signal exits at once without saving.\n"
	        "\n"
	        "Exit status: 0 success, 1 runtime error (files, data, numerics, a full disk),\n"
	        "2 bad usage, 130 / 143 stopped by SIGINT / SIGTERM.\n");
}

int unet_given(const struct options *o, int id)
{
	return id >= STARNN_TOPT_FIRST ? starnn_train_opts_given(&o->train, id) : id > 0 && id < O_END && o->given[id];
}

int parse_options(int argc, char **argv, struct options *o)
{
	static const struct option own[] = {
		{"data", required_argument, 0, O_DATA},
		{"val-data", required_argument, 0, O_VAL_DATA},
		{"catalog", required_argument, 0, O_CATALOG},
		{"size", required_argument, 0, O_SIZE},
		{"resize", required_argument, 0, O_RESIZE},
		{"synthetic-size", required_argument, 0, O_SYN_SIZE},
		{"samples", required_argument, 0, O_SAMPLES},
		{"val-samples", required_argument, 0, O_VAL_SAMPLES},
		{"depth", required_argument, 0, O_DEPTH},
		{"filters", required_argument, 0, O_FILTERS},
		{"in-frames", required_argument, 0, O_IN_FRAMES},
		{"out-frames", required_argument, 0, O_OUT_FRAMES},
		{"shuffle", required_argument, 0, O_SHUFFLE},
		{"output", required_argument, 0, O_OUTPUT},
		{"png", required_argument, 0, O_PNG},
		{"png-samples", required_argument, 0, O_PNG_SAMPLES},
		{"help", no_argument, 0, O_HELP},
		{"bn-sync", required_argument, 0, O_BN_SYNC},
		{"convention", required_argument, 0, O_CONVENTION},
	};
	/* ... and every common option (runtime/train/options.h) */
	struct option longopts[sizeof own / sizeof *own + STARNN_TOPT_COUNT + 1];
	memcpy(longopts, own, sizeof own);
	starnn_train_longopts(longopts, sizeof own / sizeof *own, 0);
	memset(o, 0, sizeof *o);
	starnn_train_opts_init(&o->train, "unet");
	o->data = "synthetic";
	o->samples = 256, o->val_samples = 64;
	o->depth = 4, o->filters = 32, o->in_frames = SEVIR_IN_FRAMES, o->out_frames = SEVIR_OUT_FRAMES;
	o->shuffle = 1;
	o->png_samples = 4;

	if (argc < 2) {
		usage(stderr);
		return -1;
	}
	const char *cmd = argv[1];
	if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
		usage(stdout);
		return PARSE_HELP;
	}
	if (strcmp(cmd, "train") == 0)
		o->cmd = CMD_TRAIN;
	else if (strcmp(cmd, "eval") == 0)
		o->cmd = CMD_EVAL;
	else if (strcmp(cmd, "predict") == 0)
		o->cmd = CMD_PREDICT;
	else if (strcmp(cmd, "info") == 0)
		o->cmd = CMD_INFO;
	else {
		fail("unknown command '%s': train, eval, predict or info (see --help)", cmd);
		return -1;
	}
	/* optind = 0 makes glibc's getopt start afresh: optind = 1 alone would
	 * keep its position inside a cluster of short options ("-hx") from a
	 * previous call, a pointer into another argv. Options start after the
	 * command: argv[2], the first after av[0] = the command. */
	int ac = argc - 1;
	char **av = argv + 1;
	optind = 0;
	opterr = 0; /* our own messages, without the libtool wrapper's name */
	int c;
	while ((c = getopt_long(ac, av, ":h", longopts, NULL)) != -1) {
		int rc = 0;
		if (c > 0 && c < O_END)
			o->given[c] = 1;
		switch (c) {
		case O_DATA: o->data = optarg; break;
		case O_VAL_DATA: o->val_data = optarg; break;
		case O_CATALOG: o->catalog = optarg; break;
		case O_SIZE: rc = starnn_parse_int("unet", "--size", optarg, 1, 16384, &o->size); break;
		case O_RESIZE:
			if (strcmp(optarg, "crop") == 0)
				o->resize = SEVIR_CROP;
			else if (strcmp(optarg, "downsample") == 0)
				o->resize = SEVIR_DOWNSAMPLE;
			else {
				fail("--resize is crop or downsample, not '%s'", optarg);
				rc = -1;
			}
			break;
		case O_SYN_SIZE: rc = starnn_parse_int("unet", "--synthetic-size", optarg, 1, 16384, &o->synthetic_size); break;
		case O_SAMPLES: rc = starnn_parse_int("unet", "--samples", optarg, 1, 100000000, &o->samples); break;
		case O_VAL_SAMPLES: rc = starnn_parse_int("unet", "--val-samples", optarg, 1, 100000000, &o->val_samples); break;
		case O_DEPTH: rc = starnn_parse_int("unet", "--depth", optarg, 1, 5, &o->depth); break;
		case O_FILTERS: rc = starnn_parse_int("unet", "--filters", optarg, 1, 4096, &o->filters); break;
		case O_IN_FRAMES:
			rc = starnn_parse_int("unet", "--in-frames", optarg, 1, SEVIR_FRAMES - 1, &o->in_frames);
			break;
		case O_OUT_FRAMES:
			rc = starnn_parse_int("unet", "--out-frames", optarg, 1, SEVIR_OUT_FRAMES, &o->out_frames);
			break;
		case O_SHUFFLE: rc = starnn_parse_onoff("unet", "--shuffle", optarg, &o->shuffle); break;
		case O_OUTPUT: o->output = optarg; break;
		case O_PNG: o->png = optarg; break;
		case O_PNG_SAMPLES: rc = starnn_parse_int("unet", "--png-samples", optarg, 0, 1000000, &o->png_samples); break;
		case O_CONVENTION:
			if ((o->convention = unet_convention_parse(optarg)) < 0) {
				fail("--convention is keras or starnn-v1, not '%s'", optarg);
				rc = -1;
			}
			break;
		case O_BN_SYNC:
			if (strcmp(optarg, "global") && strcmp(optarg, "local")) {
				fail("--bn-sync is global or local, not '%s'", optarg);
				rc = -1;
			}
			o->bn_local = strcmp(optarg, "local") == 0;
			break;
		case 'h':
		case O_HELP: usage(stdout); return PARSE_HELP;
		case ':': fail("%s needs a value (see --help)", av[optind - 1]); return -1;
		default:
			rc = starnn_train_opts_parse(&o->train, c, optarg);
			if (rc <= 0)
				break;
			if (optopt && optopt < 256)
				fail("unknown option '-%c' (see --help)", optopt);
			else
				fail("unknown option '%s' (see --help)", av[optind - 1]);
			return -1;
		}
		if (rc)
			return -1;
	}
	if (optind < ac) {
		fail("unexpected argument '%s' (see --help)", av[optind]);
		return -1;
	}

	/* Options that make no sense for the command. */
	struct {
		int id;
		const char *name;
		int allowed; /* bit per command */
	} only[] = {
		{STARNN_TOPT_RESUME, "--resume", 1 << CMD_TRAIN},
		{STARNN_TOPT_INIT, "--init", 1 << CMD_TRAIN},
		{STARNN_TOPT_CHECKPOINT_EVERY, "--checkpoint-every", 1 << CMD_TRAIN},
		{STARNN_TOPT_EVAL_EVERY, "--eval-every", 1 << CMD_TRAIN},
		{STARNN_TOPT_EPOCHS, "--epochs", 1 << CMD_TRAIN},
		{STARNN_TOPT_STEPS, "--steps", 1 << CMD_TRAIN},
		{O_OUTPUT, "--output", 1 << CMD_PREDICT},
		{O_PNG, "--png", 1 << CMD_PREDICT},
		{O_PNG_SAMPLES, "--png-samples", 1 << CMD_PREDICT},
		{O_VAL_DATA, "--val-data", 1 << CMD_TRAIN},
		{STARNN_TOPT_LOSS_SCALE, "--loss-scale", 1 << CMD_TRAIN},
		{STARNN_TOPT_PRECISION, "--precision", (1 << CMD_TRAIN) | (1 << CMD_EVAL) | (1 << CMD_PREDICT)},
		{STARNN_TOPT_CPU_WATTS, "--cpu-watts", (1 << CMD_TRAIN) | (1 << CMD_EVAL)},
		{STARNN_TOPT_GPU_WATTS, "--gpu-watts", (1 << CMD_TRAIN) | (1 << CMD_EVAL)},
		{STARNN_TOPT_IDLE_WATTS, "--idle-watts", (1 << CMD_TRAIN) | (1 << CMD_EVAL)},
		{STARNN_TOPT_SHARD, "--shard-optimizer", 1 << CMD_TRAIN},
		{STARNN_TOPT_WIRE_WEIGHTS, "--wire-weights", 1 << CMD_TRAIN},
		{STARNN_TOPT_MASTER, "--master", 1 << CMD_TRAIN},
		{STARNN_TOPT_WIRE_GRADS, "--wire-grads", 1 << CMD_TRAIN},
		{STARNN_TOPT_AWP_REL_RES, "--awp-rel-res", 1 << CMD_TRAIN},
		{STARNN_TOPT_AWP_INTERVAL, "--awp-interval", 1 << CMD_TRAIN},
		{STARNN_TOPT_AWP_START_BITS, "--awp-start-bits", 1 << CMD_TRAIN},
		{STARNN_TOPT_AWP_STRIDE, "--awp-stride", 1 << CMD_TRAIN},
		{STARNN_TOPT_AWP_ROUNDING, "--awp-rounding", 1 << CMD_TRAIN},
		{STARNN_TOPT_AWP_RULE, "--awp-rule", 1 << CMD_TRAIN},
		{STARNN_TOPT_AWP_RES_FACTOR, "--awp-res-factor", 1 << CMD_TRAIN},
	};
	for (size_t i = 0; i < sizeof only / sizeof *only; i++)
		if (unet_given(o, only[i].id) && !(only[i].allowed & (1 << o->cmd))) {
			fail("%s does not apply to '%s' (see --help)", only[i].name, cmd);
			return -1;
		}
#ifdef STARNN_TEST_HOOKS
	/* Test hook: an Inf in a gradient at this training step (the trainer
	 * checks that the step is skipped). */
	const char *inject = getenv("STARNN_UNET_INJECT_INF_STEP");
	o->train.inject_name = "STARNN_UNET_INJECT_INF_STEP";
	if (inject && *inject &&
	    starnn_parse_i64("unet", "STARNN_UNET_INJECT_INF_STEP", inject, 1, INT64_MAX, &o->train.inject_inf_step) < 0)
		return -1;
#endif
	if (starnn_train_opts_check(&o->train, o->cmd == CMD_TRAIN) < 0)
		return -1;
	if ((o->cmd == CMD_EVAL || o->cmd == CMD_PREDICT) && !o->train.checkpoint) {
		fail("%s needs --checkpoint FILE (the model to use)", cmd);
		return -1;
	}
	if (o->cmd == CMD_PREDICT && !o->output && !o->png) {
		fail("predict needs --output FILE.h5 and/or --png DIR");
		return -1;
	}
	if (o->cmd == CMD_TRAIN && o->train.steps == 0 && !o->train.checkpoint) {
		fail("--steps 0 trains nothing: give --checkpoint FILE to save the initial model");
		return -1;
	}
	return 0;
}
