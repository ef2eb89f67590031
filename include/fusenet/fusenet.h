/* fusenet.h — the whole public API in one include: every header of
 * include/fusenet/, one concept each (this one adds nothing of its own).
 * A program may include just the headers it uses instead. */
#ifndef FUSENET_FUSENET_H
#define FUSENET_FUSENET_H

#include "fusenet/adam.h"
#include "fusenet/block.h"
#include "fusenet/checkpoint.h"
#include "fusenet/clip.h"
#include "fusenet/comm.h"
#include "fusenet/config.h"
#include "fusenet/data.h"
#include "fusenet/device.h"
#include "fusenet/evaluation.h"
#include "fusenet/init.h"
#include "fusenet/input_norm.h"
#include "fusenet/layer.h"
#include "fusenet/layer_kind.h"
#include "fusenet/linear.h"
#include "fusenet/loader.h"
#include "fusenet/loss.h"
#include "fusenet/loss_tally.h"
#include "fusenet/model.h"
#include "fusenet/net.h"
#include "fusenet/optimizer.h"
#include "fusenet/outputs.h"
#include "fusenet/param.h"
#include "fusenet/provenance.h"
#include "fusenet/schedule.h"
#include "fusenet/sgd.h"
#include "fusenet/sgd_fused.h"
#include "fusenet/status.h"
#include "fusenet/tensor.h"
#include "fusenet/train_state.h"
#include "fusenet/trainer.h"
#include "fusenet/version.h"
#include "fusenet/weights.h"

#endif
