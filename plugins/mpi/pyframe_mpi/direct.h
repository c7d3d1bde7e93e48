/* The record of one prepared all-reduce and the calls of direct.c (read by cffi as its cdef too: declarations and
   integer #defines only). */
#pragma once
#include <stdint.h>

/* dtype codes (the check message and the data) */
#define PF_FLOAT32 1
#define PF_FLOAT64 2
#define PF_INT8 3
#define PF_UINT8 4
#define PF_INT16 5
#define PF_INT32 6
#define PF_INT64 7
/* reduce op codes */
#define PF_SUM 1
#define PF_PROD 2
#define PF_MAX 3
#define PF_MIN 4
#define PF_BAND 5
#define PF_BOR 6
#define PF_BXOR 7
/* results besides 0 and MPI's error codes (which are positive) */
#define PF_MISMATCH -1
#define PF_BAD_RECORD -2

struct pf_allreduce {
    intptr_t ctl;           /* the control communicator's handle (the check) */
    intptr_t comm;          /* the data communicator's handle */
    void *msg;              /* the check message: msg_count values of msg_type */
    int msg_count;
    int msg_type;
    const void *lanes;      /* this rank's lanes (lanes_bytes), copied into the message's head */
    const void *expected;   /* what the summed lanes are when every rank sent the same (lanes_bytes) */
    int lanes_bytes;
    void *data;             /* the tensor's memory: count values of type, reduced with op */
    int count;
    int type;
    int op;
    int fused;              /* 1: the data rides in the message after the lanes (a SUM in the message's dtype) */
    int stage;              /* out: 1 once the check's all-reduce returned */
};

int pf_allreduce_run(struct pf_allreduce *a);
int pf_allreduce_plain(struct pf_allreduce *a);
int pf_mpi_attached(intptr_t comm, int size, char *version, int version_len);
