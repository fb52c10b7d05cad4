/* starnn: a deep-learning training runtime on StarPU. Umbrella header: the
 * runtime core (start-up, tensors, submission, the process's launch) and
 * the training layer (parameters, the trainer and what a model sees of its
 * replicas, checkpoints, energy). Code inside starnn includes the headers
 * of its own layer and those below instead (README, Architecture). */
#ifndef STARNN_H
#define STARNN_H

#include "runtime/base/error.h"
#include "runtime/core/init.h"
#include "runtime/core/launch.h"
#include "runtime/core/submit.h"
#include "runtime/core/tensor.h"
#include "runtime/train/checkpoint.h"
#include "runtime/train/energy.h"
#include "runtime/train/options.h"
#include "runtime/train/params.h"
#include "runtime/train/replica.h"
#include "runtime/train/trainer.h"

#endif
