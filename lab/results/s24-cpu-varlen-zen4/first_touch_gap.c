#define _GNU_SOURCE
#include <sys/mman.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
typedef struct {char*p;size_t n;} A;
static void* touch(void*a){A*x=a; for(size_t i=0;i<x->n;i+=4096) x->p[i]=1; return 0;}
int main(int argc,char**argv){
  int mode=atoi(argv[1]); int gap=atoi(argv[2]); size_t n=41ull<<20; int reps=15; double tot=0, best=1e9;
  size_t wn=64ull<<20; char*w=malloc(wn); memset(w,1,wn);
  for(int r=0;r<reps;r++){
    if(gap==1) usleep(170000);
    if(gap==2){ double t=now(); while(now()-t<0.17) for(size_t i=0;i<wn;i+=64) w[i]++; }
    char*p=malloc(n);
    double t0=now();
    if(mode==1){ size_t s=((size_t)p+(2<<20)-1)&~((size_t)(2<<20)-1); size_t e=((size_t)p+n)&~((size_t)(2<<20)-1); madvise((void*)s,e-s,MADV_HUGEPAGE);}
    pthread_t th[2]; A a[2]={{p,n/2},{p+n/2,n/2}};
    for(int i=0;i<2;i++) pthread_create(&th[i],0,touch,&a[i]);
    for(int i=0;i<2;i++) pthread_join(th[i],0);
    double t=now()-t0; if(r>0){tot+=t; if(t<best)best=t;} free(p);
  }
  printf("mode %d gap %d: mean %.2f ms best %.2f ms\n",mode,gap,tot/(reps-1)*1e3,best*1e3);
}
