/* Special functions of one variable, scalar (special.c): the elementwise table's rows call them. */
#ifndef PF_SPECIAL_H
#define PF_SPECIAL_H

double pf_digamma(double x);
float pf_digammaf(float x);
double pf_trigamma(double x);
float pf_trigammaf(float x);
double pf_erfinv(double y);
float pf_erfinvf(float y);
double pf_i0(double x);
float pf_i0f(float x);
double pf_i0e(double x);
float pf_i0ef(float x);
double pf_i1(double x);
float pf_i1f(float x);
double pf_i1e(double x);
float pf_i1ef(float x);
double pf_j0(double x);
float pf_j0f(float x);
double pf_j1(double x);
float pf_j1f(float x);
double pf_y0(double x);
float pf_y0f(float x);
double pf_y1(double x);
float pf_y1f(float x);

#endif
