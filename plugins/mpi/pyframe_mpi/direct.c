/* The checked all-reduce in one C call: the agreement check and the data, below mpi4py's argument parsing.

   pyframe_mpi's prepared all-reduce (inline.py) describes one call once, in a pf_allreduce record (the
   communicators' handles, as mpi4py holds them; the check message; the lanes and the bytes they must sum to; the
   data); each call is then pf_allreduce_run(record): the lanes copied into the message's head, a small SUM's data
   into the message's slot, one MPI_Allreduce on the control communicator, the summed lanes compared with what they
   sum to when every rank sent the same ones, and either the slot copied back (check and data in one round trip) or
   the data all-reduced on the data communicator. Python holds the GIL only around the call (cffi releases it).

   Returns 0 when done, PF_MISMATCH when the ranks disagree (nothing of the data moved: the caller gathers every
   rank's description and raises), PF_BAD_RECORD when the record is not one this file can run (a caller's bug,
   never reaching MPI), or the MPI error code of the call that failed (the communicators return errors). `stage`
   says how far the call got: 1 once the check's all-reduce returned (every rank is in the same collective). */

#include <stdint.h>
#include <string.h>

#include <mpi.h>

#include "direct.h"

static MPI_Datatype dtype_of(int code) {
    switch (code) {
    case PF_FLOAT32: return MPI_FLOAT;
    case PF_FLOAT64: return MPI_DOUBLE;
    case PF_INT8: return MPI_INT8_T;
    case PF_UINT8: return MPI_UINT8_T;
    case PF_INT16: return MPI_INT16_T;
    case PF_INT32: return MPI_INT32_T;
    case PF_INT64: return MPI_INT64_T;
    default: return MPI_DATATYPE_NULL;
    }
}

static MPI_Op op_of(int code) {
    switch (code) {
    case PF_SUM: return MPI_SUM;
    case PF_PROD: return MPI_PROD;
    case PF_MAX: return MPI_MAX;
    case PF_MIN: return MPI_MIN;
    case PF_BAND: return MPI_BAND;
    case PF_BOR: return MPI_BOR;
    case PF_BXOR: return MPI_BXOR;
    default: return MPI_OP_NULL;
    }
}

static int type_size(int code) {
    switch (code) {
    case PF_FLOAT32: case PF_INT32: return 4;
    case PF_FLOAT64: case PF_INT64: return 8;
    case PF_INT16: return 2;
    case PF_INT8: case PF_UINT8: return 1;
    default: return 0;
    }
}

/* Everything a run relies on, checked before any MPI call (a record that fails never reaches MPI). */
static int record_ok(const struct pf_allreduce *a) {
    int msg_size = type_size(a->msg_type), size = type_size(a->type);
    if (msg_size == 0 || size == 0 || op_of(a->op) == MPI_OP_NULL) return 0;
    if (a->msg == NULL || a->lanes == NULL || a->expected == NULL || a->msg_count <= 0 || a->count < 0) return 0;
    if (a->count > 0 && a->data == NULL) return 0;
    if (a->lanes_bytes <= 0 || (int64_t)a->lanes_bytes > (int64_t)a->msg_count * msg_size) return 0;
    if (a->fused) {
        /* the data rides in the message right after the lanes, in the message's dtype, summed */
        if (a->type != a->msg_type || a->op != PF_SUM) return 0;
        if ((int64_t)a->lanes_bytes + (int64_t)a->count * size > (int64_t)a->msg_count * msg_size) return 0;
    }
    return 1;
}

int pf_allreduce_run(struct pf_allreduce *a) {
    if (a == NULL) return PF_BAD_RECORD;
    a->stage = 0;
    if (!record_ok(a)) return PF_BAD_RECORD;
    char *msg = (char *)a->msg;
    size_t data_bytes = (size_t)a->count * (size_t)type_size(a->type);
    memcpy(msg, a->lanes, (size_t)a->lanes_bytes);
    if (a->fused && data_bytes) memcpy(msg + a->lanes_bytes, a->data, data_bytes);
    int rc = MPI_Allreduce(MPI_IN_PLACE, msg, a->msg_count, dtype_of(a->msg_type), MPI_SUM, (MPI_Comm)a->ctl);
    if (rc != MPI_SUCCESS) return rc;
    a->stage = 1;
    if (memcmp(msg, a->expected, (size_t)a->lanes_bytes) != 0) return PF_MISMATCH;
    if (a->fused) {
        if (data_bytes) memcpy(a->data, msg + a->lanes_bytes, data_bytes);
        return 0;
    }
    if (a->count == 0) return 0;
    return MPI_Allreduce(MPI_IN_PLACE, a->data, a->count, dtype_of(a->type), op_of(a->op), (MPI_Comm)a->comm);
}

int pf_allreduce_plain(struct pf_allreduce *a) {
    if (a == NULL) return PF_BAD_RECORD;
    a->stage = 0;
    if (type_size(a->type) == 0 || op_of(a->op) == MPI_OP_NULL || a->count < 0
        || (a->count > 0 && a->data == NULL))
        return PF_BAD_RECORD;
    a->stage = 1;
    if (a->count == 0) return 0;
    return MPI_Allreduce(MPI_IN_PLACE, a->data, a->count, dtype_of(a->type), op_of(a->op), (MPI_Comm)a->comm);
}

int pf_mpi_attached(intptr_t comm, int size, char *version, int version_len) {
    /* This library is the one mpi4py started (not a second copy that was never initialised), and `comm` is one of
       its communicators with `size` ranks; `version` receives its library version (to compare with mpi4py's). */
    int flag = 0, got = -1, len = 0;
    if (version == NULL || version_len < MPI_MAX_LIBRARY_VERSION_STRING) return 0;
    if (MPI_Initialized(&flag) != MPI_SUCCESS || !flag) return 0;
    if (MPI_Finalized(&flag) != MPI_SUCCESS || flag) return 0;
    if (MPI_Comm_size((MPI_Comm)comm, &got) != MPI_SUCCESS || got != size) return 0;
    if (MPI_Get_library_version(version, &len) != MPI_SUCCESS) return 0;
    return 1;
}
