#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <pthread.h>
#include <sys/resource.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
typedef struct {char*p; size_t n;} arg;
static void* touch(void*a_){arg*a=a_; for(size_t i=0;i<a->n;i+=4096) a->p[i]=1; memset(a->p,0,a->n); return 0;}
int main(int argc,char**argv){
  int mode=atoi(argv[1]); size_t n=41u<<20;
  double best=1e9,tot=0; struct rusage r0,r1; getrusage(RUSAGE_SELF,&r0);
  for(int it=0;it<10;it++){
    char*p=malloc(n);
    double t0=now();
    size_t H=2u<<20; char*s=(char*)(((size_t)p+H-1)/H*H); char*e=(char*)(((size_t)p+n)/H*H);
    if(mode&1) madvise(s,e-s,14);
    if(mode&2) madvise(p - ((size_t)p%4096) ,n,23); /* MADV_POPULATE_WRITE */
    pthread_t th[2]; arg a[2]={{p,n/2},{p+n/2,n-n/2}};
    for(int i=0;i<2;i++) pthread_create(&th[i],0,touch,&a[i]);
    for(int i=0;i<2;i++) pthread_join(th[i],0);
    double dt=now()-t0; tot+=dt; if(dt<best)best=dt;
    free(p);
  }
  getrusage(RUSAGE_SELF,&r1);
  printf("mode %d: mean %.2f ms best %.2f ms  minflt %ld  sys %.1f ms/call\n",mode,tot/10*1e3,best*1e3,(r1.ru_minflt-r0.ru_minflt)/10,((r1.ru_stime.tv_sec-r0.ru_stime.tv_sec)*1e3+(r1.ru_stime.tv_usec-r0.ru_stime.tv_usec)/1e3)/10);
}
